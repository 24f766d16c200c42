// Hardening, round four (issue 50): the C++ side of what the Python front's hardening tests
// (python/tests/test_harden_*.py) check from Python: the one checked size computation of every
// tensor, the thread pool resized while in use, gradient accumulation from several threads,
// overlapping interrupt guards, and Sequential::push_back of a module given by value.
#include <gtest/gtest.h>

#include <csignal>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/sgd.h"
#include "train/interrupt.h"

using namespace ag;

namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

// ---- class 1: one checked size computation ------------------------------------------------------

TEST(HardenSizes, AShapeWhoseBytesDoNotFitInt64IsRefusedBeforeAnyAllocation) {
  const int64_t big = int64_t(1) << 62;
  EXPECT_NE(message_of<std::overflow_error>([&] { Tensor::empty({big}); }).find(
                "Storage size calculation overflowed with sizes=[4611686018427387904]"),
            std::string::npos);
  EXPECT_NE(message_of<std::overflow_error>([&] { Tensor::zeros({int64_t(1) << 32, int64_t(1) << 32}); }).find(
                "Storage size calculation overflowed"),
            std::string::npos);
  EXPECT_NE(message_of<std::overflow_error>([&] { Tensor::randint(0, 10, {big}); }).find("Storage size"),
            std::string::npos);
  EXPECT_NE(message_of<std::overflow_error>([&] { Tensor::empty({0, big, big}); }).find("Stride calculation overflowed"),
            std::string::npos);
  EXPECT_NE(message_of<std::invalid_argument>([&] { Tensor::empty({3, -1}); }).find(
                "Trying to create tensor with negative dimension -1: [3, -1]"),
            std::string::npos);
}

TEST(HardenSizes, AViewWhoseElementCountDoesNotFitIsRefused) {
  const Tensor one = Tensor::ones({1});
  EXPECT_NE(message_of<std::overflow_error>([&] {
              as_strided(one, {int64_t(1) << 32, int64_t(1) << 32}, {0, 0}, 0);
            }).find("numel: integer multiplication overflow"),
            std::string::npos);
  // Within range a stride-0 view of 2^62 elements is allowed, as torch's expand is.
  EXPECT_EQ(as_strided(one, {int64_t(1) << 62}, {0}, 0).numel(), int64_t(1) << 62);
}

TEST(HardenSizes, MoreMemoryThanTheMachineHasIsAnOutOfMemoryErrorNamingTheBytes) {
  const std::string m = message_of<std::bad_alloc>([] { Tensor::empty({int64_t(1) << 45}); });
  EXPECT_NE(m.find("can't allocate memory: you tried to allocate 140737488355328 bytes"), std::string::npos) << m;
  EXPECT_THROW(Tensor::empty({int64_t(1) << 45}), OutOfMemoryError);
}

// ---- class 5: the pool resized while other threads run jobs on it ------------------------------

TEST(HardenPool, ResizingWhileAnotherThreadIsInsideParallelForNeitherStallsNorLosesWork) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> jobs{0}, wrong{0};
  std::thread worker([&] {
    std::vector<int64_t> out(1 << 16);
    while (!stop.load() || jobs.load() < 200) {
      std::fill(out.begin(), out.end(), 0);
      parallel::parallel_for(static_cast<int64_t>(out.size()), 1024, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] += i;
      });
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i] != static_cast<int64_t>(i)) ++wrong;
      ++jobs;
    }
  });
  for (int round = 0; round < 500; ++round) parallel::set_num_threads(1 + round % 4);
  stop = true;
  worker.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(jobs.load(), 200);
  parallel::set_num_threads(0);
}

// ---- class 12: gradient accumulation from several threads ---------------------------------------

TEST(HardenGradThreads, ConcurrentBackwardPassesIntoOneLeafAddEveryGradient) {
  parallel::set_num_threads(1);  // each add runs on its caller's thread, all at once
  const Tensor w = Tensor::zeros({200000}, DType::Float64).requires_grad_(true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 25; ++k) sum(mul(w, 1.0)).backward();
    });
  for (auto& t : threads) t.join();
  parallel::set_num_threads(0);
  const std::vector<double> g = w.grad().to_vector<double>();
  EXPECT_EQ(*std::min_element(g.begin(), g.end()), 100.0);
  EXPECT_EQ(*std::max_element(g.begin(), g.end()), 100.0);
}

TEST(HardenGradThreads, AGradientOfAnotherShapeThanTheGradIsASizeMismatch) {
  const Tensor w = Tensor::ones({3}).requires_grad_(true);
  sum(w).backward();
  // What `p.data = x` of another shape does from Python: the leaf now has 4 elements.
  w.impl().shape = {4};
  w.impl().strides = {1};
  w.impl().storage = Tensor::ones({4}).impl().storage;
  const std::string m = message_of<std::invalid_argument>([&] { sum(mul(w, 2.0)).backward(); });
  EXPECT_NE(m.find("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
            std::string::npos) << m;
  optim::SGD opt({w}, optim::SGDOptions{0.1});
  const std::string s = message_of<std::invalid_argument>([&] { opt.step(); });
  EXPECT_NE(s.find("SGD.step"), std::string::npos) << s;
}

// ---- class 6: interrupt guards that overlap ------------------------------------------------------

TEST(HardenInterrupts, OverlappingGuardsOnTwoThreadsRestoreTheHandlerThatWasThere) {
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  std::atomic<int> inside{0};
  std::atomic<bool> release{false};
  auto run = [&] {
    train::InterruptGuard guard;
    ++inside;
    while (!release.load()) std::this_thread::yield();
  };
  std::thread a(run);
  while (inside.load() < 1) std::this_thread::yield();
  std::thread b(run);
  while (inside.load() < 2) std::this_thread::yield();
  release = true;
  a.join();
  b.join();
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

// ---- Sequential::push_back of a module given by value ---------------------------------------------

namespace {
struct Scaled : nn::Module {
  explicit Scaled(int64_t n) {
    w = register_parameter("w", Tensor::full({n}, 2.0));
    inner = register_module("inner", std::make_shared<nn::Linear>(n, n));
  }
  Tensor forward(const Tensor& x) const override { return inner->forward(mul(x, w)); }
  Tensor w;
  std::shared_ptr<nn::Linear> inner;
};
}  // namespace

TEST(HardenSequential, PushBackOfAModuleByValueKeepsItsParametersAndRuns) {
  nn::Sequential seq;
  seq.push_back(Scaled(2));
  seq.push_back("second", Scaled(2));
  EXPECT_EQ(seq.size(), 2u);
  EXPECT_EQ(seq.named_parameters().size(), 6u);
  const Tensor y = seq.forward(Tensor::ones({3, 2}));
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  sum(y).backward();
  for (const auto& p : seq.parameters()) EXPECT_TRUE(p.grad().defined());
}
