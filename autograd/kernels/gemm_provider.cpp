#include "autograd/kernels/gemm_provider.h"

#include <atomic>
#include <stdexcept>

#include "autograd/kernels/onednn.h"
#include "autograd/kernels/openblas_core.h"

namespace ag::kernels {

namespace {
std::atomic<GemmProvider> g_provider{GemmProvider::OpenBLAS};
std::atomic<Bf16Api> g_bf16_api{Bf16Api::Gemm};
}  // namespace

const char* gemm_provider_name(GemmProvider p) { return p == GemmProvider::OneDNN ? "onednn" : "openblas"; }

bool gemm_provider_available(GemmProvider p, std::string* why) {
  if (p == GemmProvider::OpenBLAS) return true;
  if (!onednn::built_with()) {
    if (why) *why = "attograd was built without oneDNN (install libdnnl-dev and build again)";
    return false;
  }
  return true;  // oneDNN's sgemm runs on any x86-64 (SSE4.1 and up)
}

void set_gemm_provider(GemmProvider p) {
  std::string why;
  if (!gemm_provider_available(p, &why))
    throw std::invalid_argument(std::string("GEMM provider ") + gemm_provider_name(p) + " cannot run here: " + why);
  g_provider.store(p, std::memory_order_relaxed);
}

GemmProvider gemm_provider() { return g_provider.load(std::memory_order_relaxed); }

Bf16Path bf16_path(GemmProvider p) {
  return p == GemmProvider::OneDNN && onednn::bf16_gemm_runs() ? Bf16Path::Native : Bf16Path::Portable;
}

const char* bf16_path_name(Bf16Path b) { return b == Bf16Path::Native ? "native" : "portable"; }

const char* bf16_api_name(Bf16Api a) { return a == Bf16Api::Matmul ? "matmul" : "gemm"; }

bool bf16_api_available(Bf16Api a, std::string* why) {
  if (!gemm_provider_available(GemmProvider::OneDNN, why)) return false;
  if (bf16_path(GemmProvider::OneDNN) != Bf16Path::Native) {
    if (why) *why = "oneDNN has no native bf16 GEMM on this CPU (it needs AVX-512)";
    return false;
  }
  if (a == Bf16Api::Gemm) return true;
  std::string failed;
  if (onednn::matmul_bf16_runs(&failed)) return true;
  if (why) *why = failed;
  return false;
}

void set_bf16_api(Bf16Api a) {
  // Gemm is the default and stays settable anywhere (nothing runs it where the path is portable).
  std::string why;
  if (a == Bf16Api::Matmul && !bf16_api_available(a, &why))
    throw std::invalid_argument(std::string("bf16 GEMMs through oneDNN's ") + bf16_api_name(a) + " cannot run here: " + why);
  g_bf16_api.store(a, std::memory_order_relaxed);
}

Bf16Api bf16_api() { return g_bf16_api.load(std::memory_order_relaxed); }

std::string gemm_provider_description(GemmProvider p) {
  if (p == GemmProvider::OneDNN) {
    if (!onednn::built_with()) return "onednn (not built)";
    return "onednn " + onednn::version() + " (JIT for " + onednn::isa() + ")";
  }
  return std::string("openblas (") + openblas_config() + ", " + openblas_core_name() + " kernels)";
}

std::string bf16_path_description(GemmProvider p) {
  if (bf16_path(p) == Bf16Path::Native) {
    if (bf16_api() == Bf16Api::Matmul)  // the kernel named at a linear's shape (x·Wᵀ, 64 rows)
      return "bf16 GEMMs native: oneDNN's matmul primitive (" + onednn::matmul_bf16_kernel(64, 256, 256) + ")";
    return "bf16 GEMMs native: oneDNN's bf16 GEMM on " + onednn::isa();
  }
  return std::string("bf16 GEMMs portable: operands rounded to bf16 in float32, through ") + gemm_provider_name(p) +
         "'s sgemm";
}

}  // namespace ag::kernels
