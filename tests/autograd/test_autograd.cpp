// The engine: accumulation, reuse, explicit gradients, graph freeing, no-grad, detach.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::leaf;

TEST(Autograd, ScalarBackwardOfAChain) {
  // y = sum(tanh(a * b + a))  with a = [0.5, -1], b = [2, 3]
  Tensor a = leaf({0.5, -1}, {2}), b = leaf({2, 3}, {2});
  Tensor y = sum(tanh(a * b + a));
  y.backward();
  const double u0 = 0.5 * 2 + 0.5, u1 = -1 * 3 - 1;
  const double d0 = 1 - std::tanh(u0) * std::tanh(u0), d1 = 1 - std::tanh(u1) * std::tanh(u1);
  EXPECT_NEAR(a.grad().at({0}), d0 * (2 + 1), 1e-12);
  EXPECT_NEAR(a.grad().at({1}), d1 * (3 + 1), 1e-12);
  EXPECT_NEAR(b.grad().at({0}), d0 * 0.5, 1e-12);
  EXPECT_NEAR(b.grad().at({1}), d1 * -1, 1e-12);
}

TEST(Autograd, TensorUsedTwiceGetsTheSumOfItsGradients) {
  Tensor x = leaf({3}, {1});
  Tensor y = sum(x * x + x);  // dy/dx = 2x + 1 = 7
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 7.0);
}

TEST(Autograd, LeafGradientsAccumulateAcrossBackwardsUntilZeroed) {
  Tensor x = leaf({1, 2}, {2});
  sum(x * 3.0).backward();
  sum(x * 3.0).backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{6, 6}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  sum(x * 2.0).backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{2, 2}));
}

TEST(Autograd, FirstLeafGradientNeverAliasesATensorSomeoneHolds) {
  // x + 0 passes the caller's upstream gradient straight through to the leaf: .grad must be a
  // copy, or writing into the upstream (or accumulating into .grad) would change the other.
  Tensor x = leaf({1, 2}, {2});
  Tensor up = Tensor::from_vector(std::vector<double>{5, 7}, {2}, DType::Float64);
  (x + 0.0).backward(up);
  EXPECT_NE(x.grad().raw_data(), up.raw_data());
  up.fill_(0.0);
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{5, 7}));
  (x + 0.0).backward(Tensor::ones({2}, DType::Float64));  // accumulates in place: up unchanged
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{6, 8}));
  EXPECT_EQ(up.to_double_vector(), (std::vector<double>{0, 0}));
}

TEST(Autograd, AnUnsharedFirstGradientBecomesTheGradWithoutACopy) {
  // The gradient a backward function computes is held by the engine alone: it is stored as
  // .grad itself (PyTorch steals it too). A hook that keeps a handle to it forces a copy.
  Tensor x = leaf({1, 2}, {2});
  const void* seen = nullptr;
  x.register_hook([&](const Tensor& g) {
    seen = g.raw_data();  // looks, keeps no handle
    return Tensor();
  });
  sum(x * 3.0).backward();
  EXPECT_EQ(x.grad().raw_data(), seen);
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{3, 3}));

  Tensor z = leaf({1, 2}, {2}), kept;
  z.register_hook([&](const Tensor& g) {
    kept = g;
    return Tensor();
  });
  sum(z * 3.0).backward();
  EXPECT_NE(z.grad().raw_data(), kept.raw_data());
  kept.fill_(0.0);
  EXPECT_EQ(z.grad().to_double_vector(), (std::vector<double>{3, 3}));
}

TEST(Autograd, ExplicitUpstreamGradientOnANonScalar) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = x * 2.0;
  EXPECT_THROW(y.backward(), std::invalid_argument);  // not a scalar, no gradient given
  y.backward(Tensor::from_vector(std::vector<double>{1, 10, 100}, {3}, DType::Float64));
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{2, 20, 200}));
  EXPECT_THROW(y.backward(Tensor::ones({2}, DType::Float64)), std::exception);  // wrong shape
}

TEST(Autograd, GraphIsFreedAfterBackwardUnlessRetained) {
  const int64_t before = Node::live_count();
  {
    Tensor x = leaf({1, 2}, {2});
    Tensor y = sum(exp(x) * x);
    EXPECT_GT(Node::live_count(), before);
    y.backward();
    EXPECT_THROW(y.backward(), std::runtime_error);  // saved tensors are gone
    Tensor z = sum(exp(x) * x);
    z.backward({}, {.retain_graph = true});
    z.backward();  // works a second time, accumulating
    EXPECT_NEAR(x.grad().at({0}), 3 * (std::exp(1) * 2), 1e-12);
  }
  EXPECT_EQ(Node::live_count(), before);  // no cycles: every node died with its tensors
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = leaf({1, 2}, {2});
  const int64_t before = Node::live_count();
  {
    NoGradGuard guard;
    Tensor y = exp(x) * x;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_EQ(Node::live_count(), before);
  }
  EXPECT_TRUE((x * 2.0).requires_grad());  // recording resumes after the guard
}

TEST(Autograd, DetachCutsHistory) {
  Tensor x = leaf({2}, {1});
  Tensor y = x * x;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.impl().storage, y.impl().storage);
  Tensor z = sum(y * d);  // d acts as a constant: dz/dx = d * 2x = 4 * 4
  z.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 16.0);
}

TEST(Autograd, DeepChainNeedsNoRecursion) {
  // 200k ops: a recursive backward or destructor would overflow the stack.
  Tensor x = leaf({1}, {1});
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = y + 0.0;
  sum(y).backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 1.0);
  y = Tensor();
}

TEST(Autograd, DiamondVisitsEachNodeOnce) {
  // b feeds two branches that rejoin; the shared node must get the summed gradient once.
  Tensor a = leaf({2}, {1});
  Tensor b = exp(a);
  Tensor c = b * 3.0 + b * b;
  sum(c).backward();  // dc/da = (3 + 2b) * b
  const double e = std::exp(2.0);
  EXPECT_NEAR(a.grad().item(), (3 + 2 * e) * e, 1e-9);
}

TEST(Autograd, RequiresGradOnlyOnFloatLeaves) {
  EXPECT_THROW(Tensor::zeros({2}, DType::Int64).requires_grad_(), std::invalid_argument);
  Tensor x = leaf({1}, {1});
  Tensor y = x * 2.0;
  EXPECT_THROW(y.requires_grad_(false), std::invalid_argument);
  EXPECT_THROW(sum(Tensor::ones({2}, DType::Float64)).backward(), std::invalid_argument);
}
