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

// Which of oneDNN's two interfaces runs the native path's bf16 GEMMs (process-wide, as the
// provider; --gemm-bf16, train/bf16_api_choice.h):
//   Gemm:   dnnl_gemm_bf16bf16f32, the BLAS-like call: one kernel set for every shape;
//   Matmul: the matmul primitive, its kernels made for each shape and kept (onednn.h:
//           matmul_bf16): brgemm, on AMX tiles where the CPU has them.
// The same products to bf16's tolerance, not to the bit (each sums in its own order).
enum class Bf16Api : uint8_t { Gemm, Matmul };
constexpr std::array<Bf16Api, 2> kBf16Apis = {Bf16Api::Gemm, Bf16Api::Matmul};
const char* bf16_api_name(Bf16Api a);  // "gemm", "matmul"
// Whether `a` can run the native path here (the native path runs, and for Matmul the primitive
// can be made); when it cannot, *why says so in a few words.
bool bf16_api_available(Bf16Api a, std::string* why = nullptr);
// The interface of every native bf16 GEMM from now on, in every thread. Throws
// std::invalid_argument naming it when it cannot run here. Not to be called while a GEMM runs.
void set_bf16_api(Bf16Api a);
Bf16Api bf16_api();

// RAII: `a` while it lives, then the previous interface.
class Bf16ApiGuard {
 public:
  explicit Bf16ApiGuard(Bf16Api a) : prev_(bf16_api()) { set_bf16_api(a); }
  ~Bf16ApiGuard() { set_bf16_api(prev_); }
  Bf16ApiGuard(const Bf16ApiGuard&) = delete;
  Bf16ApiGuard& operator=(const Bf16ApiGuard&) = delete;

 private:
  Bf16Api prev_;
};

// One line on what `p` runs here, for --version and the run header:
//   "openblas (OpenBLAS 0.3.21 ..., Haswell kernels)", "onednn 2.6.3 (JIT for avx512_core_bf16)".
std::string gemm_provider_description(GemmProvider p);
// Under bf16: "bf16 GEMMs native: oneDNN's bf16 GEMM on avx512_core_bf16", "bf16 GEMMs native:
// oneDNN's matmul primitive (brg:avx512_core_amx_bf16)" (the interface set now) or
// "bf16 GEMMs portable: ...".
std::string bf16_path_description(GemmProvider p);

}  // namespace ag::kernels
