// oneDNN's GEMMs, row-major as cblas (C = alpha·op(A)·op(B) + beta·C). The only file that sees
// oneDNN's headers is onednn.cpp; with ATTOGRAD_WITH_ONEDNN off these throw.
#pragma once
#include <cstdint>
#include <string>

namespace ag::kernels::onednn {

bool built_with();  // attograd was built against oneDNN

// oneDNN runs its GEMMs on an OpenMP team of omp_get_max_threads() threads of the calling
// thread; attograd calls it from every thread of its own pool, one GEMM per chunk, so each
// calling thread is set to a team of one before its first call (one pool, never two).
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// A and B hold bfloat16 bits (autograd/kernels/bf16.h); products summed in float32.
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Whether oneDNN's bf16 GEMM runs on this CPU (it needs AVX-512; it says "unimplemented" on others).
bool bf16_gemm_runs();
std::string version();  // "2.6.3"
std::string isa();      // the instruction set its JIT targets here: "avx512_core_bf16", "avx2", ...

}  // namespace ag::kernels::onednn
