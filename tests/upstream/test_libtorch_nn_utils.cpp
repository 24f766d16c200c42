// nn::utils' gradient clipping, on the cases of PyTorch's C++ frontend suite
// (test/cpp/api/nn_utils.cpp): the gradients, norm orders, limits and the table of which
// gradients make which norms non-finite are upstream's facts; the checks are written here in
// attograd's terms. tests/upstream/README.md names the source of each file of this folder.
// Not covered: parameters_to_vector (with a Conv2d), PackedSequence and the RNN utilities, which
// attograd does not have.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "autograd/engine.h"
#include "nn/linear.h"
#include "nn/utils/clip_grad.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
namespace utils = ag::nn::utils;

namespace {
struct ClipGradCases : ag::testing_port::SeedingFixture {};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Doubles = std::vector<double>;

// start, start + 1, ..., end - 1 as float32.
Tensor float_range(double start, double end) { return Tensor::arange(static_cast<int64_t>(end - start), DType::Float32) + start; }

// The p-norm of all the gradients together, computed here element by element (max |g| for p = ∞).
float total_norm(const std::vector<Tensor>& params, float p) {
  double acc = 0;
  for (const Tensor& t : params) {
    const Tensor a = t.grad().abs();
    if (std::isinf(p)) acc = std::max<double>(acc, a.max().item<float>());
    else acc += a.pow(p).sum().item<float>();
  }
  return std::isinf(p) ? static_cast<float>(acc) : static_cast<float>(std::pow(acc, 1.0 / p));
}

// Each parameter's gradient given the shape of the parameter (an undefined one stays undefined).
void give_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor p = params[i];
    p.set_grad(grads[i].defined() ? grads[i].clone().view(p.shape()) : grads[i]);
  }
}

// Clipping multiplies every element by one factor: the standard deviation of grad / original,
// over all elements, is 0. Returns that ratio, flattened.
Tensor ratio_to(const std::vector<Tensor>& params, const std::vector<Tensor>& originals) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < originals.size(); ++i) parts.push_back(params[i].grad().div(originals[i]).view({-1}));
  return concat(parts, 0);
}
float spread(const Tensor& t) { return t.var().sqrt().item<float>(); }
}  // namespace

TEST_F(ClipGradCases, NormScalesLargeGradientsToTheLimitAndLeavesSmallOnes) {
  nn::Linear layer(10, 10);
  const float limit = 2;
  const std::vector<float> orders = {0.5, 1.5, 2.0, 4.0, std::numeric_limits<float>::infinity()};

  // Gradients 1..100 and 0.001: far above the limit, for every order.
  const std::vector<Tensor> large = {float_range(1.0, 101).view({10, 10}), Tensor::ones({10}).div(1000)};
  for (float p : orders) {
    give_grads(layer.parameters(), large);
    const float before = total_norm(layer.parameters(), p);
    const float returned = utils::clip_grad_norm_(layer.parameters(), limit, p);
    const float after = total_norm(layer.parameters(), p);
    EXPECT_FLOAT_EQ(returned, before) << "order " << p;  // the norm before clipping is returned
    EXPECT_NEAR(after, limit, 1e-6) << "order " << p;
    EXPECT_LE(after, limit) << "order " << p;
    EXPECT_NEAR(spread(ratio_to(layer.parameters(), large)), 0, 1e-7) << "order " << p;
  }

  // Gradients well below the limit: unchanged.
  const std::vector<Tensor> small = {Tensor::rand({10, 10}).div(10000), Tensor::ones({10}).div(500)};
  for (float p : orders) {
    {
      NoGradGuard no_grad;
      for (size_t i = 0; i < small.size(); ++i) layer.parameters()[i].grad().copy_(small[i]);
    }
    const float before = total_norm(layer.parameters(), p);
    const float returned = utils::clip_grad_norm_(layer.parameters(), limit, p);
    EXPECT_FLOAT_EQ(returned, before) << "order " << p;
    EXPECT_FLOAT_EQ(total_norm(layer.parameters(), p), before) << "order " << p;
    const Tensor ratio = ratio_to(layer.parameters(), small);
    EXPECT_NEAR(spread(ratio), 0, 1e-7) << "order " << p;
    EXPECT_FLOAT_EQ(ratio[0].item<float>(), 1) << "order " << p;
  }

  // One tensor clips as a list of that one tensor does.
  Tensor alone = Tensor::randn({10, 10}), listed = Tensor::randn({10, 10});
  const Tensor g = float_range(1., 101).view({10, 10});
  alone.set_grad(g.clone());
  listed.set_grad(g.clone());
  for (float p : orders) {
    utils::clip_grad_norm_(alone, limit, p);
    utils::clip_grad_norm_({listed}, limit, p);
    EXPECT_TRUE(ag::allclose(alone.grad(), listed.grad())) << "order " << p;
  }
}

TEST_F(ClipGradCases, NormRefusesANonFiniteTotalOnlyWhenAskedAndThenChangesNothing) {
  // The parameters: ones(10) in float64 whose gradient is `scale` (on every element, or on one),
  // optionally after a parameter ones(1) whose gradient is 1.
  struct Row {
    bool one_element;
    bool finite_param_first;
    Doubles scales;
    Doubles nonfinite_orders;  // orders whose total norm is inf or nan for these gradients
    Doubles finite_orders;
  };
  const Doubles positive = {0.1, 1, 2, 3.5, kInf};
  const Doubles zero_and_negative = {0, -0.1, -1, -2, -3.5};
  const Doubles all_but_zero = {0.1, 1, 2, 3.5, kInf, -0.1, -1, -2, -3.5};
  const Doubles all = {0, 0.1, 1, 2, 3.5, kInf, -0.1, -1, -2, -3.5};
  const Doubles overflow_few = {3.5, 2};
  const Doubles finite_after_overflow = {kInf, 1, 0.1, 0, -1, -0.1, -2, -3.5};
  const std::vector<Row> rows = {
      // an infinite gradient
      {false, false, {kInf, -kInf}, all_but_zero, {0}},
      {false, true, {kInf, -kInf}, positive, zero_and_negative},
      {true, false, {kInf, -kInf}, positive, zero_and_negative},
      {false, true, {kInf, -kInf}, positive, zero_and_negative},
      // a NaN gradient
      {false, false, {kNaN}, all_but_zero, {0}},
      {false, true, {kNaN}, all_but_zero, {0}},
      {true, false, {kNaN}, all_but_zero, {0}},
      {true, true, {kNaN}, all_but_zero, {0}},
      // large but finite for every order
      {false, false, {2e22, -2e22}, {}, all},
      {false, true, {2e22, -2e22}, {}, all},
      {true, false, {2e22, -2e22}, {}, all},
      {true, true, {2e22, -2e22}, {}, all},
      // overflows for some orders only
      {false, false, {2e200, -2e200}, {3.5, 2, -2, -3.5}, {kInf, 1, 0.1, 0, -1, -0.1}},
      {false, true, {2e200, -2e200}, overflow_few, finite_after_overflow},
      {true, false, {2e200, -2e200}, overflow_few, finite_after_overflow},
      {false, true, {2e200, -2e200}, overflow_few, finite_after_overflow},
  };

  auto make_params = [](const Row& row, double scale) {
    std::vector<Tensor> params;
    if (row.finite_param_first) {
      Tensor first = Tensor::ones({1}, DType::Float64).requires_grad_(true);
      Tensor loss = first.mul(1).sum();
      loss.backward();
      params.push_back(first);
    }
    Tensor p = Tensor::ones({10}, DType::Float64).requires_grad_(true);
    Tensor loss = row.one_element ? p[1].mul(scale).sum() : p.mul(scale).sum();
    loss.backward();
    params.push_back(p);
    return params;
  };

  for (const Row& row : rows)
    for (double scale : row.scales)
      for (bool refuse : {false, true})
        for (bool nonfinite : {true, false})
          for (double order : nonfinite ? row.nonfinite_orders : row.finite_orders) {
            std::ostringstream where;
            where << "order " << order << ", error_if_nonfinite " << refuse << ", scale " << scale << ", one element "
                  << row.one_element << ", finite parameter first " << row.finite_param_first;
            std::vector<Tensor> params = make_params(row, scale);
            if (nonfinite && refuse) {
              std::vector<Tensor> kept;
              for (const Tensor& t : params) kept.push_back(t.grad().clone());
              EXPECT_THROW(utils::clip_grad_norm_(params, 1., order, true), std::exception) << where.str();
              for (size_t i = 0; i < params.size(); ++i)
                EXPECT_TRUE(ag::allclose(params[i].grad(), kept[i], 1.0, 0.0, /*equal_nan=*/true)) << where.str();
            } else {
              EXPECT_NO_THROW(utils::clip_grad_norm_(params, 1., order, refuse)) << where.str();
            }
          }
}

TEST_F(ClipGradCases, ValueBoundsEveryElementAndSkipsAMissingGradient) {
  nn::Linear layer(10, 10);
  const float limit = 2.5;
  const Tensor ramp = float_range(-50., 50).view({10, 10}).div_(5);  // −10 .. 9.8
  const Tensor twos = Tensor::ones({10}).mul_(2);
  for (const std::vector<Tensor>& grads : {std::vector<Tensor>{ramp, twos}, std::vector<Tensor>{ramp, Tensor()}}) {
    give_grads(layer.parameters(), grads);
    utils::clip_grad_value_(layer.parameters(), limit);
    for (const Tensor& p : layer.parameters()) {
      if (!p.grad().defined()) continue;
      EXPECT_LE(p.grad().max().item<float>(), limit);
      EXPECT_GE(p.grad().min().item<float>(), -limit);
    }
  }

  // One tensor clips as a list of that one tensor does.
  Tensor alone = Tensor::randn({10, 10}), listed = Tensor::randn({10, 10});
  alone.set_grad(ramp.clone());
  listed.set_grad(ramp.clone());
  utils::clip_grad_value_(alone, limit);
  utils::clip_grad_value_({listed}, limit);
  EXPECT_TRUE(ag::allclose(alone.grad(), listed.grad()));
}
