#include "cli/bench_fma_peak.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "train/peak_flops.h"

namespace ag::cli {

namespace {

// Independent chains, so that every cycle can start one: an FMA's latency (4-6 cycles) times
// the vector pipes of the cores seen needs at most 12. The loops are written in assembly, so that
// what is timed is the instruction itself whatever the build: at -O1 with AddressSanitizer the
// same loop in intrinsics kept its chains in memory and read 8 GFLOP/s on a Zen 4.
constexpr int kChains512 = 14, kChains256 = 12;  // in zmm0-13 / ymm0-11; the operands in 14, 15
constexpr long kIterations = 400000;               // 0.7-1.5 ms a trial on a Zen 4

// Each kernel runs kIterations rounds of its chains and returns their seconds; the chains end in
// `out` (room for kChains512 × 16 floats). The values stay between 0 and 1 (no infinity, no
// subnormal slows them). The caller checks that the CPU has the instructions.
constexpr int kOutFloats = kChains512 * 16;

#define AG_FMA512(i) "vfmadd213ps %%zmm15, %%zmm14, %%zmm" #i "\n\t"  // acc = acc·a + b
#define AG_FMA256(i) "vfmadd213ps %%ymm15, %%ymm14, %%ymm" #i "\n\t"
#define AG_DOT512(i) "vdpbf16ps %%zmm14, %%zmm14, %%zmm" #i "\n\t"    // acc += a₀a₀ + a₁a₁
#define AG_SET512(i) "vmovaps %%zmm15, %%zmm" #i "\n\t"                // acc = b (0 for the dot)
#define AG_SET256(i) "vmovaps %%ymm15, %%ymm" #i "\n\t"
#define AG_STORE512(i) "vmovups %%zmm" #i ", " #i "*64(%[out])\n\t"
#define AG_STORE256(i) "vmovups %%ymm" #i ", " #i "*32(%[out])\n\t"
#define AG_EACH12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define AG_EACH14(X) AG_EACH12(X) X(12) X(13)
#define AG_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                    "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory"

// The seconds of `loop(kIterations)` in this thread's CPU time (a busy machine delays the
// probe, not its cycles), as the GEMM peak is timed.
template <class Loop>
double timed(Loop loop) {
  const double t0 = train::thread_cpu_seconds();
  loop(kIterations);
  return train::thread_cpu_seconds() - t0;
}

const float kA = 0.999999f, kB = 1e-6f;
const uint32_t kPair = 0x3A803A80u;  // two bf16 of 2⁻¹⁰: each instruction adds 2·2⁻²⁰ to a lane

double fma512(float* out) {
  return timed([out](long n) {
    asm volatile("vbroadcastss %[a], %%zmm14\n\t" "vbroadcastss %[b], %%zmm15\n\t" AG_EACH14(AG_SET512)
                 "1:\n\t" AG_EACH14(AG_FMA512) "dec %[n]\n\t" "jnz 1b\n\t" AG_EACH14(AG_STORE512) "vzeroupper"
                 : [n] "+r"(n) : [a] "m"(kA), [b] "m"(kB), [out] "r"(out) : AG_CLOBBERS);
  });
}

double fma256(float* out) {
  return timed([out](long n) {
    asm volatile("vbroadcastss %[a], %%ymm14\n\t" "vbroadcastss %[b], %%ymm15\n\t" AG_EACH12(AG_SET256)
                 "1:\n\t" AG_EACH12(AG_FMA256) "dec %[n]\n\t" "jnz 1b\n\t" AG_EACH12(AG_STORE256) "vzeroupper"
                 : [n] "+r"(n) : [a] "m"(kA), [b] "m"(kB), [out] "r"(out) : AG_CLOBBERS);
  });
}

double dot_bf16(float* out) {
  return timed([out](long n) {
    asm volatile("vpbroadcastd %[pair], %%zmm14\n\t" "vpxord %%zmm15, %%zmm15, %%zmm15\n\t" AG_EACH14(AG_SET512)
                 "1:\n\t" AG_EACH14(AG_DOT512) "dec %[n]\n\t" "jnz 1b\n\t" AG_EACH14(AG_STORE512) "vzeroupper"
                 : [n] "+r"(n) : [pair] "m"(kPair), [out] "r"(out) : AG_CLOBBERS);
  });
}

#undef AG_FMA512
#undef AG_FMA256
#undef AG_DOT512
#undef AG_SET512
#undef AG_SET256
#undef AG_STORE512
#undef AG_STORE256
#undef AG_EACH12
#undef AG_EACH14
#undef AG_CLOBBERS

// GFLOP/s of the fastest of a few trials (the first also brings the core to speed).
template <class Kernel>
double best_gflops(Kernel kernel, double flop_per_trial) {
  alignas(64) float out[kOutFloats];
  double best = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 4; ++trial) best = std::min(best, kernel(out));
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
