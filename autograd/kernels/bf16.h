// bfloat16: the top 16 bits of a float32 (sign, the same 8-bit exponent, 7 bits of mantissa).
// Rounding is to nearest, ties to even, as torch's c10::BFloat16 and the AVX512_BF16
// conversions do; a NaN stays a (quiet) NaN, and a finite value past bf16's largest rounds to
// ±inf. A product of two bf16 values is exact in float32 (8 + 8 significant bits), so a GEMM
// of bf16-rounded operands in float32 arithmetic gives the same products as a native bf16 GEMM
// with float32 accumulation: only the order of the sums can differ.
#pragma once
#include <cstdint>
#include <cstring>

namespace ag::kernels {

inline uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // ties go to the even one
  return static_cast<uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
}

inline float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The float32 that holds f rounded to bfloat16 (its low 16 bits zero).
inline float round_to_bf16(float f) { return bf16_to_float(bf16_bits(f)); }

// A (rows, cols) block at row stride ld, rounded into a tight (rows, cols) block: as bf16 bits
// (for a bf16 GEMM) or as float32 values (for the portable path through sgemm).
void round_block_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst);
void round_block_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst);
// The same into dst at row stride ldd, adding each column into sums[c] (double, rows in order):
// a bias gradient Σ_rows g read in the pass that rounds g.
void round_block_to_bf16_summing_columns(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst,
                                         int64_t ldd, double* sums);
void round_block_to_bf16_summing_columns(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst,
                                         int64_t ldd, double* sums);

}  // namespace ag::kernels
