// `attograd bench train`'s multiply-add peak (cli/bench_fma_peak.h), which its GEMM floor is
// set against.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cli/bench_fma_peak.h"
#include "train/peak_flops.h"

using namespace ag;

// Measured where the CPU has the instruction, named by it; NaN and unnamed where it has not.
TEST(FmaPeak, IsMeasuredExactlyWhereTheCpuHasTheInstruction) {
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  const cli::FmaPeak f = cli::fp32_fma_peak();
  EXPECT_EQ(std::isnan(f.gflops), !fma);
  EXPECT_EQ(f.what.empty(), !fma);
  EXPECT_EQ(f.what, __builtin_cpu_supports("avx512f") ? "avx512 fma fp32" : fma ? "avx2 fma fp32" : "");
  const bool dot = __builtin_cpu_supports("avx512bf16");
  const cli::FmaPeak d = cli::bf16_dot_peak();
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
  double peak = cli::fp32_fma_peak().gflops;
  if (std::isnan(peak)) GTEST_SKIP() << "no FMA on this CPU";
  const double gemm = train::sgemm_gflops(384, 1, 2, 3, train::SgemmClock::ThreadCpu);
  for (int i = 0; i < 3 && gemm >= 1.1 * peak; ++i) peak = std::max(peak, cli::fp32_fma_peak().gflops);
  EXPECT_LT(gemm, 1.1 * peak) << "a GEMM at " << gemm << " GFLOP/s, the peak at " << peak;
  EXPECT_GT(gemm, 0.0);
}
