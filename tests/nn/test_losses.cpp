// The losses' API (nn/functional.h): torch's option names, defaults and errors, the nan of an
// all-ignored mean, and the fused cross_entropy's derivatives to third order against the same
// loss composed of ops. Values against PyTorch for every reduction are in test_ops_parity.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "nn/functional.h"
#include "tests/test_util.h"

using namespace ag;
namespace F = ag::nn::functional;
using ag::testing_util::error_of;
using ag::testing_util::max_rel;

namespace {
Tensor rnd(Shape s, uint64_t seed) {
  Generator g(seed);
  return Tensor::randn(s, DType::Float64, g).requires_grad_();
}
Tensor ints(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, s); }

// The old positional ignore_index (cross_entropy(x, t, -1)) must not compile any more: a bare
// integer would silently mean something else next to an options struct.
template <class T>
concept TakesPositionalIgnoreIndex = requires(T t) { ag::cross_entropy(t, t, int64_t{-1}); };
static_assert(!TakesPositionalIgnoreIndex<Tensor>);

// d<out, v>/dx with the backward pass recorded, so that it can be differentiated again.
Tensor grad_of(const Tensor& out, const Tensor& x, const Tensor& v) {
  return grad({out}, {x}, {v}, {.create_graph = true})[0];
}
}  // namespace

TEST(Losses, OptionsHaveTorchsDefaults) {
  EXPECT_EQ(CrossEntropyFuncOptions{}.ignore_index, -100);
  EXPECT_EQ(CrossEntropyFuncOptions{}.reduction, kMean);
  EXPECT_EQ(CrossEntropyFuncOptions{}.label_smoothing, 0.0);
  EXPECT_FALSE(CrossEntropyFuncOptions{}.weight.defined());
  EXPECT_EQ(NLLLossFuncOptions{}.ignore_index, -100);
  EXPECT_EQ(NLLLossFuncOptions{}.reduction, kMean);
  EXPECT_EQ(MSELossFuncOptions{}.reduction, kMean);
  EXPECT_EQ(L1LossFuncOptions{}.reduction, kMean);
  EXPECT_EQ(BinaryCrossEntropyWithLogitsFuncOptions{}.reduction, kMean);
  // ag::nn::functional's names are ag's functions themselves: no call can be ambiguous
  EXPECT_EQ(&F::cross_entropy, &ag::cross_entropy);
  EXPECT_EQ(&F::nll_loss, &ag::nll_loss);
  EXPECT_EQ(&F::mse_loss, &ag::mse_loss);
}

TEST(Losses, DesignatedInitializersInTorchsOrder) {
  const Tensor x = rnd({4, 3}, 1), t = ints({0, 2, 1, 2}, {4});
  // every subset of the fields, in torch's keyword order
  const double all = F::cross_entropy(x, t, {}).item();
  EXPECT_EQ(F::cross_entropy(x, t).item(), all);
  const double sum = F::cross_entropy(x, t, {.reduction = kSum}).item();
  EXPECT_NEAR(sum, 4 * all, 1e-12);
  const double ignore2 = F::cross_entropy(x, t, {.ignore_index = 2, .reduction = kSum}).item();
  const Tensor none = F::cross_entropy(x, t, {.reduction = kNone});
  EXPECT_NEAR(ignore2, none.at({0}) + none.at({2}), 1e-12);
  EXPECT_NE(F::cross_entropy(x, t, {.ignore_index = 2, .reduction = kMean, .label_smoothing = 0.1}).item(),
            F::cross_entropy(x, t, {.ignore_index = 2}).item());
  EXPECT_EQ(F::nll_loss(x, t, {.ignore_index = 0, .reduction = kNone}).at({0}), 0.0);
  EXPECT_EQ(F::mse_loss(x, x, {.reduction = kSum}).item(), 0.0);
}

TEST(Losses, DefaultIgnoreIndexIsMinus100) {
  const Tensor x = rnd({3, 4}, 2);
  const double with = F::cross_entropy(x, ints({1, -100, 3}, {3})).item();
  const Tensor rows = F::cross_entropy(x, ints({1, 0, 3}, {3}), {.reduction = kNone});
  EXPECT_NEAR(with, (rows.at({0}) + rows.at({2})) / 2, 1e-12);
  EXPECT_NEAR(F::nll_loss(x, ints({1, -100, 3}, {3})).item(), -(x.at({0, 1}) + x.at({2, 3})) / 2, 1e-12);
}

// torch's mean over an all-ignored batch is 0/0 = nan, and its gradient is 0 (it used to throw).
TEST(Losses, AllIgnoredMeanIsNanWithZeroGradient) {
  const Tensor t = ints({-100, -100}, {2});
  for (int which = 0; which < 4; ++which) {
    const Tensor x = rnd({2, 3}, 3);
    Tensor loss;
    if (which == 0) loss = F::cross_entropy(x, t);
    if (which == 1) loss = F::cross_entropy(x, t, {.label_smoothing = 0.2});
    if (which == 2) loss = F::cross_entropy(x, t, {.weight = Tensor::ones({3}, DType::Float64)});
    if (which == 3) loss = F::nll_loss(x, t);
    EXPECT_TRUE(std::isnan(loss.item())) << which;
    loss.backward();
    for (double g : x.grad().to_double_vector()) EXPECT_EQ(g, 0.0) << which;
  }
  EXPECT_EQ(F::cross_entropy(rnd({2, 3}, 4), t, {.reduction = kSum}).item(), 0.0);
  EXPECT_TRUE(std::isnan(F::mse_loss(Tensor::zeros({0}), Tensor::zeros({0})).item()));  // empty mean, as torch
}

TEST(Losses, BadArgumentsSayWhat) {
  const Tensor x = rnd({2, 3}, 5);
  EXPECT_NE(error_of<std::invalid_argument>([&] { F::cross_entropy(x, ints({0, 1}, {2}), {.label_smoothing = 1.5}); })
                .find("label_smoothing must be between 0.0 and 1.0"),
            std::string::npos);
  EXPECT_NE(error_of<std::out_of_range>([&] { F::cross_entropy(x, ints({0, 7}, {2})); }).find("target 7 at row 1"),
            std::string::npos);
  EXPECT_NE(error_of<std::out_of_range>([&] { F::nll_loss(x, ints({-1, 0}, {2})); }).find("nll_loss: target -1"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { F::cross_entropy(x, ints({0, 1, 2}, {3})); }).find("[2]"),
            std::string::npos);
  EXPECT_THROW(F::cross_entropy(x, Tensor::zeros({2, 3}, DType::Float64), {.ignore_index = 0}), std::invalid_argument);
  EXPECT_THROW(F::cross_entropy(x, ints({0, 1}, {2}), {.weight = Tensor::ones({4}, DType::Float64)}), std::invalid_argument);
  EXPECT_THROW(F::binary_cross_entropy_with_logits(x, Tensor::zeros({3}, DType::Float64)), std::invalid_argument);
}

// The fused cross_entropy's derivatives, to third order, equal those of the same loss composed
// of ops (nll_loss of log_softmax, plus the smoothing term): its first derivative is the kernel
// of cross_entropy_backward, the second that op's backward (written with ops), the third those ops'.
TEST(Losses, FusedCrossEntropyMatchesTheComposedLossToThirdOrder) {
  const Tensor t = ints({2, -100, 0, 4}, {4});
  struct Case {
    Reduction reduction;
    double eps;
  };
  for (const Case c : {Case{kMean, 0.0}, Case{kSum, 0.0}, Case{kNone, 0.0}, Case{kMean, 0.25}, Case{kNone, 0.1}}) {
    auto fused = [&](const Tensor& x) {
      return F::cross_entropy(x, t, {.reduction = c.reduction, .label_smoothing = c.eps});
    };
    auto composed = [&](const Tensor& x) {
      const Tensor logp = log_softmax(x, 1);
      const Tensor nll = F::nll_loss(logp, t, {.reduction = kNone});  // (N), 0 where ignored
      const Tensor keep = where(t == -100, Tensor::zeros({}, DType::Float64), Tensor::ones({}, DType::Float64));
      const Tensor rows = add(mul(nll, 1 - c.eps), mul(mul(neg(mean(logp, {1})), keep), c.eps));
      if (c.reduction == kNone) return rows;
      return c.reduction == kSum ? sum(rows) : div(sum(rows), sum(keep));
    };
    Generator g(11);
    const Tensor x0 = Tensor::randn({4, 5}, DType::Float64, g);
    const Tensor v = Tensor::randn(c.reduction == kNone ? Shape{4} : Shape{}, DType::Float64, g);
    const Tensor u = Tensor::randn({4, 5}, DType::Float64, g), w = Tensor::randn({4, 5}, DType::Float64, g);
    std::vector<Tensor> a, b;
    for (const auto& f : {std::function<Tensor(const Tensor&)>(fused), std::function<Tensor(const Tensor&)>(composed)}) {
      const Tensor x = x0.detach().clone().requires_grad_();
      const Tensor y = f(x);
      const Tensor g1 = grad_of(y, x, v);
      const Tensor g2 = grad_of(g1, x, u);
      const Tensor g3 = grad_of(g2, x, w);
      (a.empty() ? a : b) = {y, g1, g2, g3};
    }
    for (size_t k = 0; k < 4; ++k) EXPECT_LT(max_rel(a[k], b[k]), 1e-12) << "order " << k << " eps " << c.eps;
  }
}

// The gradient of g itself (the incoming gradient, when it carries a graph) flows through
// cross_entropy_backward too, and a float32 loss is close to the float64 one.
TEST(Losses, FusedCrossEntropyGradientOfTheIncomingGradientAndFloat32) {
  const Tensor t = ints({1, 0, 2}, {3});
  const Tensor x = rnd({3, 4}, 12);
  const Tensor s = Tensor::scalar(0.7, DType::Float64).requires_grad_();
  // d/ds <grad_x(s · loss), u> = <grad_x(loss), u>
  const Tensor loss = F::cross_entropy(x, t);
  Generator g(13);
  const Tensor u = Tensor::randn({3, 4}, DType::Float64, g);
  const Tensor gx = grad({loss}, {x}, {mul(s, 1.0)}, {.create_graph = true})[0];
  const Tensor ds = grad({sum(mul(gx, u))}, {s}, {}, {.retain_graph = true})[0];
  const Tensor g1 = grad({loss}, {x}, {}, {.retain_graph = true})[0];
  EXPECT_NEAR(ds.item(), sum(mul(g1, u)).item(), 1e-12);
  const double l64 = F::cross_entropy(x.detach(), t, {.label_smoothing = 0.1}).item();
  const double l32 = F::cross_entropy(x.detach().to(DType::Float32), t, {.label_smoothing = 0.1}).item();
  EXPECT_NEAR(l32, l64, 1e-5);
}

TEST(Losses, FusedCrossEntropyRowsInParallelGiveOneThreadsBits) {
  // The fused loss's rows are split across the threads (600 rows of 65 classes: two parts at
  // two threads); each row's loss is kept in its place and the total summed in row order, so
  // every reduction has one thread's bits, with label smoothing and an ignored row too (a part
  // writing its losses at the wrong rows fails here).
  Generator g(14);
  const Tensor x = Tensor::randn({600, 65}, DType::Float32, g, 0.0, 3.0);
  std::vector<int64_t> tv(600);
  for (int64_t i = 0; i < 600; ++i) tv[static_cast<size_t>(i)] = (i * 7) % 65;
  tv[5] = -100;
  const Tensor t = Tensor::from_vector(tv, {600});
  const int saved = parallel::num_threads();
  std::vector<Tensor> got[2];
  for (const int threads : {1, 2}) {
    parallel::set_num_threads(threads);
    for (const auto reduction : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None})
      got[threads - 1].push_back(F::cross_entropy(x, t, {.reduction = reduction, .label_smoothing = 0.1}));
  }
  parallel::set_num_threads(saved);
  for (size_t k = 0; k < got[0].size(); ++k) EXPECT_TRUE(equal(got[0][k], got[1][k])) << k;
}

// ATen's binary_cross_entropy reads both with their size-1 dims squeezed out, so an (N, 1) input
// takes an (N) target (libtorch's test_optimizer_xor calls it so); the loss has the input's shape.
// nn::functional's and BCELoss keep libtorch's deprecation error.
TEST(Losses, BinaryCrossEntropySqueezesSizeOneDimsAsATen) {
  Tensor p = Tensor::from_vector(std::vector<double>{0.25, 0.5, 0.875}, {3, 1}, DType::Float64);
  p.requires_grad_();
  Tensor t = Tensor::from_vector(std::vector<double>{0.0, 1.0, 1.0}, {3}, DType::Float64);
  Tensor none = binary_cross_entropy(p, t, {.reduction = kNone});
  EXPECT_EQ(none.shape(), (Shape{3, 1}));
  Tensor same = binary_cross_entropy(p, reshape(t, {3, 1}), {.reduction = kNone});
  EXPECT_TRUE(equal(none, same));
  Tensor mean = binary_cross_entropy(p, t);
  mean.backward();
  EXPECT_NEAR(mean.item(), same.mean().item(), 1e-15);
  EXPECT_EQ(p.grad().shape(), (Shape{3, 1}));
  EXPECT_NE(error_of<std::exception>([&] { F::binary_cross_entropy(p, t); }).find("Using a target size ([3]) that is different to the "
                                                                   "input size ([3, 1]) is deprecated."),
            std::string::npos);
  EXPECT_NE(error_of<std::exception>([&] { binary_cross_entropy(p, Tensor::zeros({2}, DType::Float64)); }).find("size-1 dims"),
            std::string::npos);
}
