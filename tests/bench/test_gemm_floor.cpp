// The GEMM floor of `attograd bench train` (bench/gemm_floor.h): the recorder must see every
// float GEMM of a step with its real shape, and the replay must run exactly those.
#include <gtest/gtest.h>

#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/kernels/gemm.h"
#include "autograd/parallel.h"
#include "bench/gemm_floor.h"

using namespace ag;

namespace {
bool same(const bench::GemmShape& s, bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  return s.ta == ta && s.tb == tb && s.M == M && s.N == N && s.K == K;
}
}  // namespace

TEST(GemmFloor, RecordsEveryGemmOfLinearForwardAndBackward) {
  Generator gen(7);
  Tensor x = Tensor::randn({6, 4}, DType::Float32, gen).requires_grad_();  // (rows, in)
  Tensor w = Tensor::randn({5, 4}, DType::Float32, gen).requires_grad_();  // (out, in)
  const int threads = parallel::num_threads();
  const auto calls = bench::record_gemms([&] { sum(linear(x, w)).backward(); });
  EXPECT_EQ(parallel::num_threads(), threads);  // restored
  ASSERT_EQ(calls.size(), 3u);
  // y (6, 5) = x @ wᵀ;  dx (6, 4) = dy @ w;  dw (5, 4) = dyᵀ @ x  (the backward's order may vary)
  EXPECT_TRUE(same(calls[0], false, true, 6, 5, 4));
  int dx = 0, dw = 0;
  for (size_t i = 1; i < 3; ++i) {
    dx += same(calls[i], false, false, 6, 4, 5);
    dw += same(calls[i], true, false, 5, 4, 6);
  }
  EXPECT_EQ(dx, 1);
  EXPECT_EQ(dw, 1);
  // Recording is off again: a GEMM after it is not seen by anyone.
  EXPECT_FALSE(bench::recording_gemms());
}

TEST(GemmFloor, RecordsTheGemmsOfTheLibraryFromOutsideIt) {
  // The recorder interposes cblas_sgemm in this program: the library's own GEMM kernel is seen,
  // results unchanged, and it still runs on OpenBLAS when nothing records.
  const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  float c[4] = {0, 0, 0, 0};
  const auto calls = bench::record_gemms([&] { kernels::gemm(false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(same(calls[0], false, false, 2, 2, 2));
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{19, 22, 43, 50}));
  kernels::gemm(false, true, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{17, 23, 39, 53}));
}

TEST(GemmFloor, DoubleGemmsAreNotRecorded) {
  Generator gen(8);
  Tensor a = Tensor::randn({3, 3}, DType::Float64, gen), b = Tensor::randn({3, 3}, DType::Float64, gen);
  EXPECT_TRUE(bench::record_gemms([&] { (void)matmul(a, b); }).empty());
}

TEST(GemmFloor, ReplayCountsTheCallsAndTheirFlops) {
  // One GEMM large enough to be split by rows, one small one dealt to a single thread.
  const std::vector<bench::GemmShape> calls = {{false, true, 256, 128, 64, 0.0f}, {true, false, 8, 8, 8, 1.0f}};
  const bench::GemmFloor f = bench::replay_gemms(calls, 2, 2);
  EXPECT_EQ(f.calls, 2);
  EXPECT_DOUBLE_EQ(f.gflop, 2.0 * (256 * 128 * 64 + 8 * 8 * 8) / 1e9);
  EXPECT_GT(f.ms, 0.0);
}

TEST(GemmFloor, HookIsOffAndThreadsRestoredWhenTheStepThrows) {
  const int threads = parallel::num_threads();
  EXPECT_THROW(bench::record_gemms([] { throw std::runtime_error("step failed"); }), std::runtime_error);
  EXPECT_FALSE(bench::recording_gemms());
  EXPECT_EQ(parallel::num_threads(), threads);
}
