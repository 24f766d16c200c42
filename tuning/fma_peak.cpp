#include "tuning/fma_peak.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tuning/kept.h"

namespace ag::tuning {

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
  const double t0 = thread_cpu_seconds();
  loop(kIterations);
  return thread_cpu_seconds() - t0;
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

// AMX: four accumulator tiles (tmm0-3), each the product of one of two A tiles (tmm4, 5) and
// one of two B tiles (tmm6, 7), as a brgemm kernel blocks them: consecutive products write
// different tiles, so that each can start before the last has finished. Every tile is 16 rows
// of 64 bytes: A 16×32 bf16, B 16 pairs of rows × 16 columns (the VNNI layout), C 16×16 float32.
constexpr long kAmxIterations = 25000;  // 0.1 M tile products: about 0.5 ms at one per 16 cycles
constexpr int kAmxTiles = 4;           // accumulators, stored into `out` (kAmxTiles × 256 floats)
constexpr double kAmxFlopPerProduct = 2.0 * 16 * 16 * 32;
constexpr uint16_t kAmxValue = 0x3A80;  // bf16 2⁻¹⁰: each product adds 32 · 2⁻²⁰ = 2⁻¹⁵ to every element

struct alignas(64) TileConfig {  // ldtilecfg's 64 bytes, palette 1
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};

double amx_bf16(float* out) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  alignas(64) uint16_t operand[16 * 32];
  std::fill(std::begin(operand), std::end(operand), kAmxValue);
  const long stride = 64;  // bytes from one tile row to the next, in memory as in the tile
  const double t0 = thread_cpu_seconds();
  long n = kAmxIterations;
  asm volatile("ldtilecfg %[cfg]\n\t"
               "tilezero %%tmm0\n\t" "tilezero %%tmm1\n\t" "tilezero %%tmm2\n\t" "tilezero %%tmm3\n\t"
               "tileloadd (%[ab],%[stride],1), %%tmm4\n\t" "tileloadd (%[ab],%[stride],1), %%tmm5\n\t"
               "tileloadd (%[ab],%[stride],1), %%tmm6\n\t" "tileloadd (%[ab],%[stride],1), %%tmm7\n\t"
               "1:\n\t"
               "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"  // tmm0 += tmm4 · tmm6
               "tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
               "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
               "tdpbf16ps %%tmm7, %%tmm5, %%tmm3\n\t"
               "dec %[n]\n\t" "jnz 1b\n\t"
               "tilestored %%tmm0, (%[out],%[stride],1)\n\t" "tilestored %%tmm1, 1024(%[out],%[stride],1)\n\t"
               "tilestored %%tmm2, 2048(%[out],%[stride],1)\n\t" "tilestored %%tmm3, 3072(%[out],%[stride],1)\n\t"
               "tilerelease"
               : [n] "+r"(n)
               : [cfg] "m"(cfg), [ab] "r"(operand), [stride] "r"(stride), [out] "r"(out)
               : "cc", "memory");
  return thread_cpu_seconds() - t0;
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

// GFLOP/s of the fastest of a few trials (the first also brings the core to speed). `out` has
// room for what every kernel stores; `check` (if any) is asked after each trial whether the
// kernel's results are right, and a wrong one makes the figure NaN.
template <class Kernel, class Check = std::nullptr_t>
double best_gflops(Kernel kernel, double flop_per_trial, Check check = nullptr) {
  alignas(64) float out[std::max(kOutFloats, kAmxTiles * 256)];
  double best = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 4; ++trial) {
    best = std::min(best, kernel(out));
    if constexpr (!std::is_same_v<Check, std::nullptr_t>)
      if (!check(out)) return std::numeric_limits<double>::quiet_NaN();
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

// XFEATURE_XTILEDATA: the tile data's bit in the XSAVE state, which Linux grants on request
// (kernel Documentation/arch/x86/xstate.rst); the request, for headers older than it.
#ifndef ARCH_REQ_XCOMP_PERM
#define ARCH_REQ_XCOMP_PERM 0x1023
#endif
namespace {
constexpr long kXfeatureXtiledata = 18;
}  // namespace

bool amx_bf16_usable(std::string* why) {
  static const std::string missing = []() -> std::string {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return "the CPU has no CPUID leaf 7";
    const bool tile = (edx >> 24) & 1, bf16 = (edx >> 22) & 1;
    if (!tile || !bf16)
      return "the CPU reports no AMX-TILE and AMX-BF16 (CPUID leaf 7; a hypervisor may hide them)";
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureXtiledata) != 0)
      return std::string("Linux does not grant the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
             std::strerror(errno) + ")";
    return "";
  }();
  if (why) *why = missing;
  return missing.empty();
}

FmaPeak amx_bf16_peak() {
  if (!amx_bf16_usable()) return {std::numeric_limits<double>::quiet_NaN(), ""};
  // Every element of every tile holds kAmxIterations · 2⁻¹⁵ (exact: float32 holds it).
  const float expected = static_cast<float>(kAmxIterations) / 32768.0f;
  auto all_right = [expected](const float* out) {
    return std::all_of(out, out + kAmxTiles * 256, [expected](float v) { return v == expected; });
  };
  return {best_gflops(amx_bf16, kAmxIterations * kAmxTiles * kAmxFlopPerProduct, all_right), "amx bf16 tiles"};
}

}  // namespace ag::tuning
