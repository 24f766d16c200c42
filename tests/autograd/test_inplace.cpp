// In-place safety (engine.h): storage version counters, saved tensors that notice an in-place
// write before backward, and in-place writes refused where they would corrupt a graph.
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/init.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;

using ag::testing_util::expect_has;

TEST(Inplace, EveryWriteBumpsTheVersionSharedByViewsAndDetach) {
  Tensor t = Tensor::zeros({2, 3});
  const uint64_t v0 = t.version();
  t.fill_(1.0);
  EXPECT_EQ(t.version(), v0 + 1);
  Tensor d = t.detach(), n = narrow(t, 1, 0, 2);
  d.copy_(Tensor::ones({2, 3}));
  EXPECT_EQ(t.version(), v0 + 2);
  n.copy_(Tensor::zeros({2, 2}));
  EXPECT_EQ(t.version(), v0 + 3);
  EXPECT_EQ(d.version(), n.version());
  nn::init::zeros_(t);
  EXPECT_EQ(t.version(), v0 + 4);
  Generator g(1);
  nn::init::normal_(t, 0, 1, g);  // writes through data<T>() and says so
  EXPECT_EQ(t.version(), v0 + 5);
}

// The example: a = x*1; y = sum(a*a); a.copy_(zeros); y.backward() gave x.grad = 0.
TEST(Inplace, CopyIntoASavedInputMakesBackwardThrow) {
  for (const bool grad_mode : {true, false}) {  // recorded (torch's semantics) or a plain write: a was saved either way
    SCOPED_TRACE(grad_mode ? "grad mode" : "no grad");
    Tensor x = leaf({1, 2, 3});
    Tensor a = mul(x, 1.0);
    Tensor y = sum(mul(a, a));
    {
      SetGradEnabledGuard mode(grad_mode);
      a.copy_(Tensor::zeros({3}, DType::Float64));
    }
    const std::string msg = error_of([&] { y.backward(); });
    expect_has(msg, {"modified by an inplace operation", "'mul'", "float64[3]", "is at version 1", "expected version 0"});
    EXPECT_FALSE(x.grad().defined());
  }
}

TEST(Inplace, WriteThroughANarrowViewMakesBackwardThrow) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor a = mul(x, 1.0);
  Tensor y = sum(mul(a, a));
  narrow(a, 0, 1, 2).fill_(0.0);  // recorded: a's history is rewritten, but mul saved a before
  EXPECT_EQ(a.to_double_vector(), (std::vector<double>{1, 0, 0, 4}));
  expect_has(error_of([&] { y.backward(); }), {"modified by an inplace operation", "'mul'", "float64[4]"});
  Tensor b = mul(x, 1.0);
  Tensor z = sum(mul(b, b));
  narrow(b.detach(), 0, 1, 2).fill_(0.0);  // through detach(): the values only, the same version
  expect_has(error_of([&] { z.backward(); }), {"modified by an inplace operation", "'mul'", "float64[4]"});
}

TEST(Inplace, WriteThroughDetachOfASavedOutputMakesBackwardThrow) {
  Tensor x = leaf({0.5, -1.0});
  Tensor e = exp(x);  // exp saves its own output
  Tensor y = sum(e);
  e.detach().fill_(7.0);
  expect_has(error_of([&] { y.backward(); }), {"modified by an inplace operation", "the output", "'exp'"});
}

TEST(Inplace, LeafThatRequiresGradRefusesInPlaceWritesInGradModeOnly) {
  Tensor w = leaf({1, 2});
  expect_has(error_of([&] { w.fill_(0.0); }), {"leaf", "requires grad", "in-place"});
  EXPECT_THROW(w.copy_(Tensor::zeros({2}, DType::Float64)), std::runtime_error);
  {
    NoGradGuard no_grad;  // optimizers and initialisers
    w.fill_(3.0);
    w.copy_(Tensor::ones({2}, DType::Float64));
  }
  EXPECT_EQ(w.to_double_vector(), (std::vector<double>{1, 1}));
  nn::init::zeros_(w);  // an initialiser works in grad mode (it holds its own NoGradGuard)
  EXPECT_EQ(w.to_double_vector(), (std::vector<double>{0, 0}));
}

TEST(Inplace, CopyFromASourceThatRequiresGradIsRecordedAsTorchs) {
  Tensor x = leaf({1, 2});
  Tensor buf = Tensor::zeros({2}, DType::Float64);
  buf.copy_(mul(x, 2.0));  // buf takes the copy's history (torch: CopyBackwards)
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_FALSE(buf.is_leaf());
  sum(mul(buf, buf)).backward();  // d/dx Σ(2x)² = 8x
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{8, 16}));
  Tensor plain = Tensor::zeros({2}, DType::Float64);
  plain.copy_(mul(x, 2.0).detach());  // the values only
  EXPECT_FALSE(plain.requires_grad());
  EXPECT_EQ(plain.to_double_vector(), (std::vector<double>{2, 4}));
}

TEST(Inplace, WritesToUnsavedTensorsOrAfterBackwardAreFine) {
  Tensor x = leaf({1, 2});
  Tensor y = sum(mul(x, 3.0));  // mul_scalar saves nothing
  {
    NoGradGuard no_grad;
    x.fill_(5.0);
  }
  y.backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{3, 3}));
  Tensor z = sum(mul(x, x));
  z.backward();
  NoGradGuard no_grad;
  x.fill_(0.0);  // the graph is gone: nothing to check
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{13, 13}));
}

// An optimizer step writes the weights in place: a graph kept with retain_graph that saved them
// must refuse a second backward rather than differentiate at the old weights.
TEST(Inplace, OptimizerStepInvalidatesAGraphThatSavedTheWeights) {
  for (const bool adamw : {true, false}) {
    Tensor w = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}, DType::Float64).requires_grad_();
    Tensor x = Tensor::from_vector(std::vector<double>{1, -1}, {1, 2}, DType::Float64);
    Tensor y = sum(matmul(x, w));  // matmul saves w for dL/dx... and x for dL/dw
    Tensor z = sum(mul(w, w));     // mul saves w
    Tensor loss = add(y, z);
    loss.backward({}, {.retain_graph = true});
    const uint64_t v0 = w.version();
    std::unique_ptr<optim::Optimizer> opt;
    if (adamw) opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w}, optim::AdamWOptions{.lr = 0.1});
    else opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions{.lr = 0.1});
    opt->step();
    EXPECT_EQ(w.version(), v0 + 1);
    expect_has(error_of([&] { loss.backward(); }), {"modified by an inplace operation", "float64[2, 2]"});
  }
}
