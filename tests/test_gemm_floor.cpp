// The GEMM floor of `attograd bench train` (bench/gemm_floor.h): the recorder must see every
// float GEMM of a step with its real shape, and the replay must run exactly those.
#include <gtest/gtest.h>

#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "bench/gemm_floor.h"

using namespace ag;

namespace {
bool same(const kernels::GemmShape& s, bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
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
  // The hook is off again: a GEMM after recording is not seen by anyone.
  EXPECT_EQ(kernels::g_gemm_observer, nullptr);
}

TEST(GemmFloor, DoubleGemmsAreNotRecorded) {
  Generator gen(8);
  Tensor a = Tensor::randn({3, 3}, DType::Float64, gen), b = Tensor::randn({3, 3}, DType::Float64, gen);
  EXPECT_TRUE(bench::record_gemms([&] { (void)matmul(a, b); }).empty());
}

TEST(GemmFloor, ReplayCountsTheCallsAndTheirFlops) {
  // One GEMM large enough to be split by rows, one small one dealt to a single thread.
  const std::vector<kernels::GemmShape> calls = {{false, true, 256, 128, 64, 0.0f}, {true, false, 8, 8, 8, 1.0f}};
  const bench::GemmFloor f = bench::replay_gemms(calls, 2, 2);
  EXPECT_EQ(f.calls, 2);
  EXPECT_DOUBLE_EQ(f.gflop, 2.0 * (256 * 128 * 64 + 8 * 8 * 8) / 1e9);
  EXPECT_GT(f.ms, 0.0);
}

TEST(GemmFloor, HookIsOffAndThreadsRestoredWhenTheStepThrows) {
  const int threads = parallel::num_threads();
  EXPECT_THROW(bench::record_gemms([] { throw std::runtime_error("step failed"); }), std::runtime_error);
  EXPECT_EQ(kernels::g_gemm_observer, nullptr);
  EXPECT_EQ(parallel::num_threads(), threads);
}
