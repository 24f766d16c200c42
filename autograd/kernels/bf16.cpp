#include "autograd/kernels/bf16.h"

#include "autograd/kernels/multiversion.h"

namespace ag::kernels {

namespace {
// Rows this many ahead are asked for while one is rounded. A head's (L, hd) block inside a
// packed (N, L, 3E) projection has its rows 3E floats apart (4.6 KB on the large model): each
// on a page of its own, where the hardware prefetcher does not follow, so that without this
// every row waited for memory in turn.
constexpr int64_t kRowsAhead = 8;
inline void prefetch_row(const float* row, int64_t cols) {
  for (int64_t c = 0; c < cols; c += 16) __builtin_prefetch(row + c);  // one 64-byte line per 16 floats
}
}  // namespace

// Branch-free per element, so that each clone vectorises the row (16 lanes with AVX-512): the
// GEMMs of attention round small tiles, where a scalar loop would cost more than the product.
AG_MULTIVERSION
void round_block_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    if (ld != cols && r + kRowsAhead < rows) prefetch_row(src + (r + kRowsAhead) * ld, cols);
    const float* s = src + r * ld;
    uint16_t* d = dst + r * cols;
    for (int64_t c = 0; c < cols; ++c) d[c] = bf16_bits(s[c]);
  }
}

AG_MULTIVERSION
void round_block_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    if (ld != cols && r + kRowsAhead < rows) prefetch_row(src + (r + kRowsAhead) * ld, cols);
    const float* s = src + r * ld;
    float* d = dst + r * cols;
    for (int64_t c = 0; c < cols; ++c) d[c] = round_to_bf16(s[c]);
  }
}

namespace {
// The loop of both round_block_to_bf16_summing_columns below (inlined into each clone, so that
// `round` is a known function and the row still vectorises).
template <class Dst, class Round>
inline __attribute__((always_inline)) void round_summing_columns(const float* src, int64_t rows, int64_t cols,
                                                                 int64_t ld, Dst* dst, int64_t ldd, double* sums,
                                                                 Round round) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld;
    Dst* d = dst + r * ldd;
    for (int64_t c = 0; c < cols; ++c) {
      sums[c] += s[c];
      d[c] = round(s[c]);
    }
  }
}
}  // namespace

// The same block rounded into dst (row stride ldd), each column also added, row by row in
// order, into sums[c] in double: over one block of rows, sum(src, {0})'s order (autograd/ops/reduce.cpp).
AG_MULTIVERSION
void round_block_to_bf16_summing_columns(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst,
                                         int64_t ldd, double* sums) {
  round_summing_columns(src, rows, cols, ld, dst, ldd, sums, [](float v) { return bf16_bits(v); });
}

AG_MULTIVERSION
void round_block_to_bf16_summing_columns(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst,
                                         int64_t ldd, double* sums) {
  round_summing_columns(src, rows, cols, ld, dst, ldd, sums, [](float v) { return round_to_bf16(v); });
}

}  // namespace ag::kernels
