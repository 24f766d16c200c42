// `attograd bench train`'s multiply-add peak (tuning/fma_peak.h), which its GEMM floor is
// set against.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tuning/fma_peak.h"
#include "tuning/peak_flops.h"

using namespace ag;

// Measured where the CPU has the instruction, named by it; NaN and unnamed where it has not.
TEST(FmaPeak, IsMeasuredExactlyWhereTheCpuHasTheInstruction) {
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  const tuning::FmaPeak f = tuning::fp32_fma_peak();
  EXPECT_EQ(std::isnan(f.gflops), !fma);
  EXPECT_EQ(f.what.empty(), !fma);
  EXPECT_EQ(f.what, __builtin_cpu_supports("avx512f") ? "avx512 fma fp32" : fma ? "avx2 fma fp32" : "");
  const bool dot = __builtin_cpu_supports("avx512bf16");
  const tuning::FmaPeak d = tuning::bf16_dot_peak();
  EXPECT_EQ(std::isnan(d.gflops), !dot);
  EXPECT_EQ(d.what, dot ? "avx512_bf16 dot" : "");
  // No core issues more than two 512-bit multiply-adds a cycle (64 float32 flop, 128 as bf16
  // dot products); at under 6 GHz a figure above that miscounts the flop.
  if (fma) {
    EXPECT_GT(f.gflops, 1.0);
    EXPECT_LT(f.gflops, 64 * 6.0);
  }
  if (dot) {
    EXPECT_GT(d.gflops, 1.0);
    EXPECT_LT(d.gflops, 128 * 6.0);
  }
}

// The limit bounds every GEMM from above: a single-threaded float32 GEMM through the provider
// (either library, whatever its kernels) never passes the FMA peak of the same thread. A peak
// that counted too few flop (half the lanes, say) falls below it. Both in thread CPU time, so a
// busy machine slows neither figure; where a core's sibling thread (SMT) may have been busy
// during one reading of the peak, the best of up to four readings is taken.
TEST(FmaPeak, NoGemmPassesTheFloat32Peak) {
  double peak = tuning::fp32_fma_peak().gflops;
  if (std::isnan(peak)) GTEST_SKIP() << "no FMA on this CPU";
  const double gemm = tuning::sgemm_gflops(384, 1, 2, 3, tuning::SgemmClock::ThreadCpu);
  for (int i = 0; i < 3 && gemm >= 1.1 * peak; ++i) peak = std::max(peak, tuning::fp32_fma_peak().gflops);
  EXPECT_LT(gemm, 1.1 * peak) << "a GEMM at " << gemm << " GFLOP/s, the peak at " << peak;
  EXPECT_GT(gemm, 0.0);
}

// AMX's bf16 tile peak: measured, named and within what tiles can do where the CPU has AMX and
// Linux grants the tile state; NaN and unnamed elsewhere (both checked here, wherever we are).
TEST(AmxPeak, IsMeasuredExactlyWhereTheTilesCanBeUsed) {
  std::string why;
  const bool usable = tuning::amx_bf16_usable(&why);
  EXPECT_EQ(why.empty(), usable) << why;
  const tuning::FmaPeak a = tuning::amx_bf16_peak();
  EXPECT_EQ(std::isnan(a.gflops), !usable);
  EXPECT_EQ(a.what, usable ? "amx bf16 tiles" : "");
}

// The probe's figure where there are tiles: above the vector dot product's peak of the same core
// (a tile product is 16 times the work of a 512-bit vdpbf16ps, issued at most every 16 cycles,
// so AMX's peak is at least the vector one's: a figure below it miscounts) and below 2048 flop a
// cycle at 6 GHz. The probe itself returns NaN when its tiles' sums are wrong.
TEST(AmxPeak, TilesOutrunTheVectorDotProduct) {
  std::string why;
  if (!tuning::amx_bf16_usable(&why)) GTEST_SKIP() << "no AMX tiles here: " << why;
  double amx = tuning::amx_bf16_peak().gflops;
  ASSERT_FALSE(std::isnan(amx)) << "the tiles' sums were wrong";
  const double dot = tuning::bf16_dot_peak().gflops;
  for (int i = 0; i < 3 && amx <= dot; ++i) amx = std::max(amx, tuning::amx_bf16_peak().gflops);  // a busy sibling
  EXPECT_GT(amx, dot);
  EXPECT_LT(amx, 2048 * 6.0);
}
