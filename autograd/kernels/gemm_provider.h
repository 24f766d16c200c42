// Which library runs attograd's float32 GEMMs: OpenBLAS (the default) or oneDNN. Both are called
// single-threaded from inside the chunks of attograd's own pool (parallel.h), so there is one
// pool whatever the provider. float64 GEMMs (gradient checks) always go to OpenBLAS.
//
// Why a second one: OpenBLAS picks its kernels by CPU model, and a build older than the CPU (or
// OPENBLAS_CORETYPE set to an older kernel set) leaves half of an AVX-512 vector unit idle;
// oneDNN generates its kernels at run time for the instructions the CPU reports, and has a
// bf16 GEMM (AVX512_BF16, AMX) for autocast (autograd/autocast.h).
//
// The choice is process-wide (a property of the machine, not of a thread). Names are parsed by
// the flag and TOML readers; here the enum, its names and what each runs on.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace ag::kernels {

enum class GemmProvider : uint8_t { OpenBLAS, OneDNN };
constexpr std::array<GemmProvider, 2> kGemmProviders = {GemmProvider::OpenBLAS, GemmProvider::OneDNN};
const char* gemm_provider_name(GemmProvider p);  // "openblas", "onednn"

// Whether `p` can run here; when it cannot, *why says so in a few words ("attograd was built
// without oneDNN").
bool gemm_provider_available(GemmProvider p, std::string* why = nullptr);

// The provider of every float32 GEMM from now on, in every thread. Throws std::invalid_argument
// naming the provider when it cannot run here. Not to be called while a GEMM runs.
void set_gemm_provider(GemmProvider p);
GemmProvider gemm_provider();

// RAII: `p` while it lives, then the previous provider (tests, the auto measurement).
class GemmProviderGuard {
 public:
  explicit GemmProviderGuard(GemmProvider p) : prev_(gemm_provider()) { set_gemm_provider(p); }
  ~GemmProviderGuard() { set_gemm_provider(prev_); }
  GemmProviderGuard(const GemmProviderGuard&) = delete;
  GemmProviderGuard& operator=(const GemmProviderGuard&) = delete;

 private:
  GemmProvider prev_;
};

// How a GEMM under bf16 autocast runs with provider p:
//   Native:   oneDNN's bf16 GEMM (bf16 operands, float32 accumulation) on the CPU's own bf16
//             instructions where it has them (AVX512_BF16, AMX; emulated on other AVX-512 CPUs);
//   Portable: the operands rounded to bf16 and held in float32, through p's sgemm: the same
//             products (exact in float32), summed in float32. Every CPU, every provider.
enum class Bf16Path : uint8_t { Native, Portable };
Bf16Path bf16_path(GemmProvider p);
const char* bf16_path_name(Bf16Path b);  // "native", "portable"

// One line on what `p` runs here, for --version and the run header:
//   "openblas (OpenBLAS 0.3.21 ..., Haswell kernels)", "onednn 2.6.3 (JIT for avx512_core_bf16)".
std::string gemm_provider_description(GemmProvider p);
// Under bf16: "bf16 GEMMs native: oneDNN bf16 on avx512_core_bf16" or "bf16 GEMMs portable: ..."
std::string bf16_path_description(GemmProvider p);

}  // namespace ag::kernels
