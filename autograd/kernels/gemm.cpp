// float32 GEMMs: the provider's sgemm, or under bf16 autocast the operands rounded to bfloat16
// (tight copies: heads read in place from a packed projection have a row stride of 3E) and the
// provider's bf16 path (gemm_provider.h: native or portable).
#include <cblas.h>

#include <vector>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/onednn.h"

namespace ag::kernels {

namespace {

void provider_sgemm(GemmProvider p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (p == GemmProvider::OneDNN) return onednn::sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta,
              C, static_cast<int>(ldc));
}

// Per thread: the two operands of the GEMM it is running.
thread_local Bf16Matrix t_a, t_b;

// op(A) is M×K: stored as M rows of K, or (transposed) K rows of M.
void round_a(Bf16Matrix& r, bool ta, int64_t M, int64_t K, const float* A, int64_t lda, bool native) {
  r.round(A, ta ? K : M, ta ? M : K, lda, native);
}

// Operands already rounded for the path `native` says (bf16 bits, or float32 values), each
// given by its first element and row stride.
void gemm_rounded(GemmProvider p, bool native, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                  const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (native)
    (bf16_api() == Bf16Api::Matmul ? onednn::matmul_bf16 : onednn::gemm_bf16)(
        ta, tb, M, N, K, alpha, static_cast<const uint16_t*>(a), lda, static_cast<const uint16_t*>(b), ldb, beta, C, ldc);
  else
    provider_sgemm(p, ta, tb, M, N, K, alpha, static_cast<const float*>(a), lda, static_cast<const float*>(b), ldb,
                   beta, C, ldc);
}

// a and b rounded for the same path (native or not).
void gemm_rounded(GemmProvider p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16Matrix& a,
                  const Bf16Matrix& b, float beta, float* C, int64_t ldc) {
  gemm_rounded(p, a.native(), ta, tb, M, N, K, alpha, a.data(), a.ld(), b.data(), b.ld(), beta, C, ldc);
}

// A weight rounded before (autocast's cache) fits this GEMM's op(B) (K×N) as stored and this path.
bool fits(const Bf16Matrix* b, bool tb, int64_t N, int64_t K, bool native) {
  return b && b->native() == native && b->rows() == (tb ? N : K) && b->cols() == (tb ? K : N);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const GemmProvider p = gemm_provider();
  if (!is_autocast_enabled() || K == 0 || M == 0 || N == 0) {  // (nothing to round: C = beta·C at most)
    const profiler::RecordScope profile("sgemm", profiler::Category::Gemm, M, N, K);
    return provider_sgemm(p, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  const profiler::RecordScope profile("bf16 gemm", profiler::Category::Gemm, M, N, K);
  const bool native = bf16_path(p) == Bf16Path::Native;
  round_a(t_a, ta, M, K, A, lda, native);
  t_b.round(B, tb ? N : K, tb ? K : N, ldb, native);  // op(B) is K×N
  gemm_rounded(p, ta, tb, M, N, K, alpha, t_a, t_b, beta, C, ldc);
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, const Bf16Matrix* B_rounded, float beta, float* C, int64_t ldc) {
  const GemmProvider p = gemm_provider();
  if (!is_autocast_enabled() || K == 0 || M == 0 || N == 0 || !fits(B_rounded, tb, N, K, bf16_path(p) == Bf16Path::Native))
    return gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const profiler::RecordScope profile("bf16 gemm", profiler::Category::Gemm, M, N, K);
  round_a(t_a, ta, M, K, A, lda, B_rounded->native());
  gemm_rounded(p, ta, tb, M, N, K, alpha, t_a, *B_rounded, beta, C, ldc);
}

void gemm_rows_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, const Bf16Matrix* B_rounded, float beta, const float* bias, float* C,
                    int64_t ldc) {
  const GemmProvider p = gemm_provider();
  const bool native = bf16_path(p) == Bf16Path::Native;
  // B rounded once here (unless a weight already is), by the calling thread, into storage of
  // its own: the chunks below may run on this thread too, where gemm() would reuse t_b.
  thread_local Bf16Matrix t_shared_b;
  if (!fits(B_rounded, tb, N, K, native)) {
    t_shared_b.round(B, tb ? N : K, tb ? K : N, ldb, native);
    B_rounded = &t_shared_b;
  }
  const Bf16Matrix& b = *B_rounded;
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(N * K, 1));
  parallel::parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
    const int64_t n = r1 - r0;
    if (bias) fill_rows_with_bias(C + r0 * ldc, ldc, bias, n, N);
    const profiler::RecordScope profile("bf16 gemm", profiler::Category::Gemm, n, N, K);
    round_a(t_a, ta, n, K, A + (ta ? r0 : r0 * lda), lda, native);
    gemm_rounded(p, ta, tb, n, N, K, alpha, t_a, b, beta, C + r0 * ldc, ldc);
  });
}

bool bf16_path_is_native() { return bf16_path(gemm_provider()) == Bf16Path::Native; }

namespace {
// Rounding is bound by memory: a matrix of fewer than 2·kRoundGrain values stays on one thread.
// (64k had kept a default model's weights and its c_proj gradients serial: 50–60 µs each on a
// Zen 4, several times the pool's hand-off.)
constexpr int64_t kRoundGrain = int64_t(1) << 14;
}  // namespace

void round_rows_parallel(Bf16Matrix& r, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  r.reshape(rows, cols, bf16_path_is_native());
  const int64_t grain = std::max<int64_t>(1, kRoundGrain / std::max<int64_t>(cols, 1));
  parallel::parallel_for(rows, grain, [&](int64_t r0, int64_t r1) { r.round_rows(src, ld, r0, r1); });
}

void round_rows_parallel_summing_columns(Bf16Matrix& r, const float* src, int64_t rows, int64_t cols, int64_t ld,
                                        float* sums) {
  r.reshape(rows, cols, bf16_path_is_native());
  // Split by rows, as the ops that write g split it, so that each thread reads rows in its own
  // cache: split by columns, each thread read half of every row from the other core's cache,
  // 2-6x slower on a Zen 4 (the c_attn gradient's halves 87-600 µs against 47-49). Each part
  // sums its rows' columns in double, and the parts' sums are added in part order: a function
  // of the sizes and the thread count only (as the fused MLP's bias sums), so the same bits on
  // every run with that many threads, and sum(src, {0})'s own on one.
  const int64_t grain = std::max<int64_t>(1, kRoundGrain / std::max<int64_t>(cols, 1));
  const int64_t parts = rows >= 2 * grain ? std::min<int64_t>(parallel::num_threads(), rows) : 1;
  std::vector<double> partial(static_cast<size_t>(parts * cols), 0.0);  // (parts, cols)
  parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
      r.claim_rows(r0, r1);
      r.round_rows_summing(src, ld, r0, r1, partial.data() + part * cols);
    }
  });
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    for (int64_t part = 0; part < parts; ++part) s += partial[static_cast<size_t>(part * cols + c)];
    sums[c] = static_cast<float>(s);
  }
}

void gemm_rounded_rows(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16Matrix& A,
                       int64_t a_row0, const Bf16Matrix& B, float beta, float* C, int64_t ldc) {
  const profiler::RecordScope profile("bf16 gemm", profiler::Category::Gemm, M, N, K);
  // Row r of op(A) is row r of A as stored, or (transposed) its column r.
  gemm_rounded(gemm_provider(), A.native(), ta, tb, M, N, K, alpha, ta ? A.at(0, a_row0) : A.at(a_row0, 0), A.ld(),
               B.data(), B.ld(), beta, C, ldc);
}

void gemm_rounded_blocks(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                         const void* B, int64_t ldb, bool native, float beta, float* C, int64_t ldc) {
  const profiler::RecordScope profile("bf16 gemm", profiler::Category::Gemm, M, N, K);
  gemm_rounded(gemm_provider(), native, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_rows_rounded(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16Matrix& A,
                       const Bf16Matrix& B, float beta, const float* bias, float* C, int64_t ldc) {
  // The same split of C's rows as gemm_rows and gemm_rows_bf16, so the products are the same.
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(N * K, 1));
  parallel::parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
    const int64_t n = r1 - r0;
    if (bias) fill_rows_with_bias(C + r0 * ldc, ldc, bias, n, N);
    gemm_rounded_rows(ta, tb, n, N, K, alpha, A, r0, B, beta, C + r0 * ldc, ldc);
  });
}

}  // namespace ag::kernels
