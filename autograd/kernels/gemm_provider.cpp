#include "autograd/kernels/gemm_provider.h"

#include <atomic>
#include <stdexcept>

#include "autograd/kernels/onednn.h"
#include "autograd/kernels/openblas_core.h"

namespace ag::kernels {

namespace {
std::atomic<GemmProvider> g_provider{GemmProvider::OpenBLAS};
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

std::string gemm_provider_description(GemmProvider p) {
  if (p == GemmProvider::OneDNN) {
    if (!onednn::built_with()) return "onednn (not built)";
    return "onednn " + onednn::version() + " (JIT for " + onednn::isa() + ")";
  }
  return std::string("openblas (") + openblas_config() + ", " + openblas_core_name() + " kernels)";
}

std::string bf16_path_description(GemmProvider p) {
  if (bf16_path(p) == Bf16Path::Native) return "bf16 GEMMs native: oneDNN's bf16 GEMM on " + onednn::isa();
  return std::string("bf16 GEMMs portable: operands rounded to bf16 in float32, through ") + gemm_provider_name(p) +
         "'s sgemm";
}

}  // namespace ag::kernels
