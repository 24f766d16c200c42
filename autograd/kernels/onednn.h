// oneDNN's GEMMs, row-major as cblas (C = alpha·op(A)·op(B) + beta·C). The only files that see
// oneDNN's headers are onednn.cpp (its gemm API) and onednn_matmul.cpp (its matmul primitive);
// with ATTOGRAD_WITH_ONEDNN off these throw.
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

// The same product as gemm_bf16 through oneDNN's matmul primitive (onednn_matmul.cpp): its
// brgemm kernels, on AMX tiles where the CPU has them. Transposed operands are read in place
// (memory descriptors' strides); each thread keeps the primitives it made, by shape, transposes,
// leading dimensions, alpha and beta. The same thread rules as the calls above.
void matmul_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
                 const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);
// Whether the primitive can be made here for bf16 operands and computes 1·2 = 2; *why says
// what failed otherwise.
bool matmul_bf16_runs(std::string* why = nullptr);
// The implementation oneDNN picks for x·Wᵀ of tight operands, x (M, K), W (N, K):
// "brg:avx512_core_amx_bf16" (AMX tiles), "brg:avx512_core_bf16", "gemm:jit"; "" if none.
std::string matmul_bf16_kernel(int64_t M, int64_t N, int64_t K);
// How many primitives the calling thread keeps (tests: that a product went through them).
int64_t matmul_bf16_kept_here();
std::string version();  // "2.6.3"
std::string isa();      // the instruction set its JIT targets here: "avx512_core_bf16", "avx2", ...

namespace detail {  // for onednn.cpp and onednn_matmul.cpp only
// The calling thread's OpenMP team set to one before its first oneDNN call (see onednn.cpp).
void one_thread_per_call();
}  // namespace detail

}  // namespace ag::kernels::onednn
