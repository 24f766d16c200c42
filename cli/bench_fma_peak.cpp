#include "cli/bench_fma_peak.h"

#include <time.h>

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace ag::cli {

namespace {

// The calling thread's CPU time: a busy machine delays the probe, not its cycles.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Independent chains, so that every cycle can start one: an FMA's latency (4-6 cycles) times
// the two pipes of the cores seen is at most 12; AVX2 has 16 registers, so 12 there.
constexpr int kChains512 = 16, kChains256 = 12;
constexpr long kIterations = 400000;  // 0.7-1.7 ms a trial on a Zen 4

// Each kernel runs kIterations rounds of its chains of multiply-adds and returns their seconds;
// the chains end in `out` (room for kChains512 × 16 floats), so that none can be dropped. The
// values stay between 0 and 16 (no infinity, no subnormal slows them). One function per
// instruction set, each compiled for its own target.
constexpr int kOutFloats = kChains512 * 16;

__attribute__((target("avx512f"))) double fma512(float* out) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  const double t0 = thread_seconds();
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);  // acc = acc·a + b
  const double t = thread_seconds() - t0;
  std::memcpy(out, acc, sizeof acc);
  return t;
}

__attribute__((target("avx2,fma"))) double fma256(float* out) {
  __m256 acc[kChains256];
  for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  const double t0 = thread_seconds();
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  const double t = thread_seconds() - t0;
  std::memcpy(out, acc, sizeof acc);
  return t;
}

// bf16 pairs of 2⁻¹⁰: each instruction adds 2·2⁻²⁰ to every lane (acc += a₀a₀ + a₁a₁).
__attribute__((target("avx512f,avx512bf16"))) double dot_bf16(float* out) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-10f), _mm512_set1_ps(0x1p-10f));
  const double t0 = thread_seconds();
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, a);
  const double t = thread_seconds() - t0;
  std::memcpy(out, acc, sizeof acc);
  return t;
}

// GFLOP/s of the fastest of a few trials (the first also brings the core to speed).
template <class Kernel>
double best_gflops(Kernel kernel, double flop_per_trial) {
  alignas(64) float out[kOutFloats];
  double best = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 4; ++trial) {
    best = std::min(best, kernel(out));
    asm volatile("" : : "r"(out) : "memory");  // as if out were read: every chain is kept
  }
  return flop_per_trial / best / 1e9;
}

}  // namespace

FmaPeak fp32_fma_peak() {
  __builtin_cpu_init();
  // flop: kIterations rounds × chains × lanes × 2 (a multiply and an add)
  if (__builtin_cpu_supports("avx512f"))
    return {best_gflops(fma512, 2.0 * kIterations * kChains512 * 16), "avx512 fma fp32"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {best_gflops(fma256, 2.0 * kIterations * kChains256 * 8), "avx2 fma fp32"};
  return {std::numeric_limits<double>::quiet_NaN(), ""};
}

FmaPeak bf16_dot_peak() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) return {std::numeric_limits<double>::quiet_NaN(), ""};
  // flop: rounds × chains × 16 lanes × 2 pairs × 2 (a multiply and an add each)
  return {best_gflops(dot_bf16, 4.0 * kIterations * kChains512 * 16), "avx512_bf16 dot"};
}

}  // namespace ag::cli
