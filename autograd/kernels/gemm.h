// Row-major GEMM: C = alpha · op(A)·op(B) + beta · C, op = transpose if flagged. float32 goes to
// the chosen provider (gemm_provider.h: OpenBLAS or oneDNN) and, inside an AutocastGuard(BF16)
// (autograd/autocast.h), takes its operands rounded to bfloat16 with float32 accumulation;
// float64 goes to OpenBLAS. No hook: `attograd bench` sees the GEMMs from outside the library
// (bench/gemm_floor.h).
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "autograd/autocast.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag::kernels {

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

class Bf16Matrix;  // autograd/kernels/bf16_matrix.h
// The same, but under bf16 autocast B comes already rounded when B_rounded holds it (a weight
// kept for the autocast region, autograd/autocast.h: autocast_weight); B_rounded may be null.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, const Bf16Matrix* B_rounded, float beta, float* C, int64_t ldc);

inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                 const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  const profiler::RecordScope profile("dgemm", profiler::Category::Gemm, M, N, K);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta,
              C, static_cast<int>(ldc));
}

// float64 is never rounded: the same call without B_rounded (so that templates call one name).
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                 const double* B, int64_t ldb, const Bf16Matrix*, double beta, double* C, int64_t ldc) {
  gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Below this many multiply-adds a GEMM runs on one thread: splitting costs more than it saves.
constexpr int64_t kParallelGemmWork = int64_t(1) << 20;

// Rows [0, n) of C (leading dimension ldc) set to bias (N): the start of a GEMM with beta = 1
// that adds onto it while the rows are in cache (no separate bias pass; BLAS skips zeroing C).
template <class T>
void fill_rows_with_bias(T* C, int64_t ldc, const T* bias, int64_t n, int64_t N) {
  for (int64_t r = 0; r < n; ++r) std::copy(bias, bias + N, C + r * ldc);
}

// gemm_rows and gemm_rows_bias of float32 under bf16 autocast: B is rounded once, before the
// rows are split, instead of once per thread (or not at all when B_rounded holds it); each
// thread rounds its own rows of A. bias may be null (then alpha, beta as given).
void gemm_rows_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, const Bf16Matrix* B_rounded, float beta, const float* bias, float* C,
                    int64_t ldc);

// Under bf16 autocast, an operand that several GEMMs read is rounded once and kept (a linear's
// input: its forward and its weight's gradient; the gradient of its output: both backward
// GEMMs), as torch's autocast keeps the bf16 copies its backward reads.
//   round_rows_parallel: src (rows, cols; row stride ld) into r, for the current provider's
//     bf16 path, the rows split across attograd's threads;
//   gemm_rows_rounded: C = alpha·op(A)·op(B) + beta·C from two such matrices (B may be a
//     weight's autocast copy), the rows of C split as gemm_rows splits them, so the products
//     equal gemm_rows's under autocast; with bias (N) each row starts at it and beta must be 1.
bool bf16_path_is_native();  // the current provider's bf16 path: oneDNN's bf16 GEMM, not portable
void round_rows_parallel(Bf16Matrix& r, const float* src, int64_t rows, int64_t cols, int64_t ld);
// round_rows_parallel, and sums (cols) = Σ_rows src in the same read: a linear's bias gradient
// from the pass that rounds the gradient of its output. Each thread's rows are summed in double
// and the parts added in order: the same bits for a thread count, sum(src, {0})'s on one thread.
void round_rows_parallel_summing_columns(Bf16Matrix& r, const float* src, int64_t rows, int64_t cols, int64_t ld,
                                         float* sums);
void gemm_rows_rounded(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16Matrix& A,
                       const Bf16Matrix& B, float beta, const float* bias, float* C, int64_t ldc);
// One GEMM on this thread from rounded operands: rows [a_row0, a_row0 + M) of op(A) times op(B).
void gemm_rounded_rows(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16Matrix& A,
                       int64_t a_row0, const Bf16Matrix& B, float beta, float* C, int64_t ldc);
// One GEMM on this thread from blocks of rounded operands (of the same path), each given by the
// address of its first element (Bf16Matrix::at) and its matrix's row stride: the attention's
// tiles, read in place from a head's rounded q, k, v.
void gemm_rounded_blocks(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                         const void* B, int64_t ldb, bool native, float beta, float* C, int64_t ldc);

// C = alpha·op(A)·op(B) + beta·C with the rows of C split across attograd's threads (each
// part is an ordinary single-threaded BLAS call on a block of rows).
// Under bf16 autocast, B_rounded (if not null) is B already rounded.
template <class T>
void gemm_rows(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
               int64_t ldb, T beta, T* C, int64_t ldc, const Bf16Matrix* B_rounded = nullptr) {
  if constexpr (std::is_same_v<T, float>)
    if (is_autocast_enabled() && K > 0)
      return gemm_rows_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, B_rounded, beta, nullptr, C, ldc);
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(N * K, 1));
  parallel::parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
    // Row r of op(A) starts at A + r·lda when A is stored as is, at A + r when transposed.
    gemm(ta, tb, r1 - r0, N, K, alpha, A + (ta ? r0 : r0 * lda), lda, B, ldb, beta, C + r0 * ldc, ldc);
  });
}

// C = bias + op(A)·op(B), bias (N) repeated in every row: each thread writes the bias into its
// block of rows and the GEMM adds onto it (beta = 1) while those rows are in cache, so there is
// no serial bias pass and BLAS does not zero C first.
template <class T>
void gemm_rows_bias(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                    int64_t ldb, const T* bias, T* C, int64_t ldc, const Bf16Matrix* B_rounded = nullptr) {
  if constexpr (std::is_same_v<T, float>)
    if (is_autocast_enabled() && K > 0)
      return gemm_rows_bf16(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, B_rounded, 1.0f, bias, C, ldc);
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(N * K, 1));
  parallel::parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
    fill_rows_with_bias(C + r0 * ldc, ldc, bias, r1 - r0, N);
    gemm(ta, tb, r1 - r0, N, K, T(1), A + (ta ? r0 : r0 * lda), lda, B, ldb, T(1), C + r0 * ldc, ldc);
  });
}

}  // namespace ag::kernels
