// Ported from PyTorch's test/cpp/api/nn_utils.cpp: the gradient clipping cases, with
// upstream's inputs, expected values and assertions, respelled per docs/cpp_api.md
// (tests/libtorch_port.h says how). p.mutable_grad() = g is p.set_grad(g); p.grad().data()
// is p.grad(). Left out: ConvertParameters (parameters_to_vector, Conv2d) and the
// PackedSequence and RNN utilities, which attograd does not have.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "autograd/engine.h"
#include "nn/linear.h"
#include "nn/utils/clip_grad.h"
#include "tests/libtorch_port.h"

using namespace ag;
namespace utils = ag::nn::utils;

namespace {
struct NNUtilsTest : ag::testing_port::SeedingFixture {};

// torch::arange(start, end) of floats.
Tensor farange(double start, double end) { return Tensor::arange(static_cast<int64_t>(end - start), DType::Float32) + start; }
// Tensor.std() (with Bessel's correction, as torch's default).
Tensor std_of(const Tensor& t) { return t.var().sqrt(); }
}  // namespace

TEST_F(NNUtilsTest, ClipGradNorm) {
  auto l = nn::Linear(10, 10);
  float max_norm = 2;
  auto compute_norm = [&](float norm_type) -> float {
    float total_norm = 0.0;
    if (norm_type != std::numeric_limits<float>::infinity()) {
      for (const auto& p : l.parameters()) total_norm += p.grad().abs().pow(norm_type).sum().item<float>();
      return std::pow(total_norm, 1.0 / norm_type);
    } else {
      for (const auto& p : l.parameters()) {
        auto param_max = p.grad().abs().max().item<float>();
        if (param_max > total_norm) total_norm = param_max;
      }
      return total_norm;
    }
  };
  auto compare_scaling = [&](const std::vector<Tensor>& grads) -> Tensor {
    std::vector<Tensor> p_scale;
    for (size_t i = 0; i < grads.size(); i++) {
      auto param = l.parameters()[i];
      auto grad = grads[i];
      p_scale.push_back(param.grad().div(grad).view({-1}));
    }
    auto scale = concat(p_scale, 0);
    return scale;  // need to assert std is 0.
  };

  std::vector<Tensor> grads = {
      farange(1.0, 101).view({10, 10}),
      Tensor::ones({10}).div(1000),
  };
  std::vector<float> norm_types = {
      0.5, 1.5, 2.0, 4.0, std::numeric_limits<float>::infinity(),
  };
  for (auto norm_type : norm_types) {
    for (size_t i = 0; i < grads.size(); i++) l.parameters()[i].set_grad(grads[i].clone().view(l.parameters()[i].shape()));
    auto norm_before = compute_norm(norm_type);
    auto norm = utils::clip_grad_norm_(l.parameters(), max_norm, norm_type);
    auto norm_after = compute_norm(norm_type);
    ASSERT_FLOAT_EQ(norm, norm_before);
    ASSERT_NEAR(norm_after, max_norm, 1e-6);
    ASSERT_LE(norm_after, max_norm);
    auto scaled = compare_scaling(grads);
    ASSERT_NEAR(0, std_of(scaled).item<float>(), 1e-7);
  }
  // Small gradients should be left unchanged
  grads = {
      Tensor::rand({10, 10}).div(10000),
      Tensor::ones({10}).div(500),
  };
  for (auto norm_type : norm_types) {
    {
      NoGradGuard no_grad;
      for (size_t i = 0; i < grads.size(); i++) l.parameters()[i].grad().copy_(grads[i]);
    }
    auto norm_before = compute_norm(norm_type);
    auto norm = utils::clip_grad_norm_(l.parameters(), max_norm, norm_type);
    auto norm_after = compute_norm(norm_type);
    ASSERT_FLOAT_EQ(norm, norm_before);
    ASSERT_FLOAT_EQ(norm_before, norm_after);
    ASSERT_LE(norm_after, max_norm);
    auto scaled = compare_scaling(grads);
    ASSERT_NEAR(0, std_of(scaled).item<float>(), 1e-7);
    ASSERT_FLOAT_EQ(scaled[0].item<float>(), 1);
  }
  // should accept a single tensor as input
  auto p1 = Tensor::randn({10, 10});
  auto p2 = Tensor::randn({10, 10});
  auto g = farange(1., 101).view({10, 10});
  p1.set_grad(g.clone());
  p2.set_grad(g.clone());
  for (const auto norm_type : norm_types) {
    utils::clip_grad_norm_(p1, max_norm, norm_type);
    utils::clip_grad_norm_({p2}, max_norm, norm_type);
    ASSERT_TRUE(ag::allclose(p1.grad(), p2.grad()));
  }
}

// Check that clip_grad_norm_ raises an error if the norm of a gradient is non-finite
TEST_F(NNUtilsTest, ClipGradNormErrorIfNonfinite) {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();

  using Vector = std::vector<double>;

  Vector norms_pos = {0.1, 1, 2, 3.5, inf};
  Vector norms_neg = {-0.1, -1, -2, -3.5};
  Vector norms_neg_plus_0 = {0, -0.1, -1, -2, -3.5};
  Vector norms_except_0 = {0.1, 1, 2, 3.5, inf, -0.1, -1, -2, -3.5};
  Vector norms_all = {0, 0.1, 1, 2, 3.5, inf, -0.1, -1, -2, -3.5};

  // Each entry: grad_only_one_elem, prefix_finite_grad_param, scalars, norms_nonfinite, norms_finite
  std::vector<std::tuple<bool, bool, Vector, Vector, Vector>> test_cases({
      // Test errors from an infinite grad
      std::make_tuple(false, false, Vector({inf, -inf}), norms_except_0, Vector({0})),
      std::make_tuple(false, true, Vector({inf, -inf}), norms_pos, norms_neg_plus_0),
      std::make_tuple(true, false, Vector({inf, -inf}), norms_pos, norms_neg_plus_0),
      std::make_tuple(false, true, Vector({inf, -inf}), norms_pos, norms_neg_plus_0),

      // Test errors from a NaN grad
      std::make_tuple(false, false, Vector({nan}), norms_except_0, Vector({0})),
      std::make_tuple(false, true, Vector({nan}), norms_except_0, Vector({0})),
      std::make_tuple(true, false, Vector({nan}), norms_except_0, Vector({0})),
      std::make_tuple(true, true, Vector({nan}), norms_except_0, Vector({0})),

      // Test a grad that should never error
      std::make_tuple(false, false, Vector({2e22, -2e22}), Vector(), norms_all),
      std::make_tuple(false, true, Vector({2e22, -2e22}), Vector(), norms_all),
      std::make_tuple(true, false, Vector({2e22, -2e22}), Vector(), norms_all),
      std::make_tuple(true, true, Vector({2e22, -2e22}), Vector(), norms_all),

      // Test a grad that will overflow to inf for only some norm orders
      std::make_tuple(false, false, Vector({2e200, -2e200}), Vector({3.5, 2, -2, -3.5}), Vector({inf, 1, 0.1, 0, -1, -0.1})),
      std::make_tuple(false, true, Vector({2e200, -2e200}), Vector({3.5, 2}), Vector({inf, 1, 0.1, 0, -1, -0.1, -2, -3.5})),
      std::make_tuple(true, false, Vector({2e200, -2e200}), Vector({3.5, 2}), Vector({inf, 1, 0.1, 0, -1, -0.1, -2, -3.5})),
      std::make_tuple(false, true, Vector({2e200, -2e200}), Vector({3.5, 2}), Vector({inf, 1, 0.1, 0, -1, -0.1, -2, -3.5})),
  });

  auto gen_parameters = [](double scalar, bool grad_only_one_elem, bool prefix_finite_grad_param) {
    auto param = Tensor::ones({10}, DType::Float64).requires_grad_(true);
    if (grad_only_one_elem) param[1].mul(scalar).sum().backward();
    else param.mul(scalar).sum().backward();

    std::vector<Tensor> parameters;
    if (prefix_finite_grad_param) {
      auto prefix_param = Tensor::ones({1}, DType::Float64).requires_grad_(true);
      prefix_param.mul(1).sum().backward();
      parameters.push_back(prefix_param);
    }
    parameters.push_back(param);

    return parameters;
  };

  auto run_test_case = [&gen_parameters](double norm_type, bool error_if_nonfinite, double scalar, bool grad_only_one_elem,
                                         bool prefix_finite_grad_param, bool is_norm_nonfinite) {
    std::stringstream ss;
    ss << "norm_type: " << norm_type << ", error_if_nonfinite: " << error_if_nonfinite << ", scalar: " << scalar
       << ", grad_only_one_elem: " << grad_only_one_elem << ", prefix_finite_grad_param: " << prefix_finite_grad_param
       << ", is_norm_nonfinite: " << is_norm_nonfinite;
    std::string msg = ss.str();

    auto parameters = gen_parameters(scalar, grad_only_one_elem, prefix_finite_grad_param);

    if (is_norm_nonfinite && error_if_nonfinite) {
      std::vector<Tensor> grads_before;
      for (auto p : parameters) grads_before.push_back(p.grad().clone());
      EXPECT_THROW(utils::clip_grad_norm_(parameters, 1., norm_type, true), std::exception) << msg;
      // Grads should not change if error is thrown
      for (size_t p_idx = 0; p_idx < parameters.size(); ++p_idx)
        ASSERT_TRUE(ag::allclose(parameters[p_idx].grad(), grads_before[p_idx], 1.0, 0.0, /*equal_nan*/ true)) << msg;
    } else {
      EXPECT_NO_THROW(utils::clip_grad_norm_(parameters, 1., norm_type, error_if_nonfinite)) << msg;
    }
  };

  for (auto test_case : test_cases) {
    auto grad_only_one_elem = std::get<0>(test_case);
    auto prefix_finite_grad_param = std::get<1>(test_case);
    auto scalars = std::get<2>(test_case);
    auto norms_nonfinite = std::get<3>(test_case);
    auto norms_finite = std::get<4>(test_case);

    for (auto error_if_nonfinite : {false, true}) {
      for (auto scalar : scalars) {
        for (auto norm_type : norms_nonfinite)
          run_test_case(norm_type, error_if_nonfinite, scalar, grad_only_one_elem, prefix_finite_grad_param, true);

        for (auto norm_type : norms_finite)
          run_test_case(norm_type, error_if_nonfinite, scalar, grad_only_one_elem, prefix_finite_grad_param, false);
      }
    }
  }
}

TEST_F(NNUtilsTest, ClipGradValue) {
  auto l = nn::Linear(10, 10);
  float clip_value = 2.5;

  Tensor grad_w = farange(-50., 50).view({10, 10}).div_(5);
  Tensor grad_b = Tensor::ones({10}).mul_(2);
  std::vector<std::vector<Tensor>> grad_lists = {{grad_w, grad_b}, {grad_w, Tensor()}};
  for (auto grad_list : grad_lists) {
    for (size_t i = 0; i < grad_list.size(); i++) {
      auto p = l.parameters()[i];
      auto g = grad_list[i];
      p.set_grad(g.defined() ? g.clone().view(p.shape()) : g);
    }

    utils::clip_grad_value_(l.parameters(), clip_value);
    for (const auto& p : l.parameters()) {
      if (p.grad().defined()) {
        ASSERT_LE(p.grad().max().item<float>(), clip_value);
        ASSERT_GE(p.grad().min().item<float>(), -clip_value);
      }
    }
  }

  // Should accept a single Tensor as input
  auto p1 = Tensor::randn({10, 10});
  auto p2 = Tensor::randn({10, 10});
  auto g = farange(-50., 50).view({10, 10}).div_(5);
  p1.set_grad(g.clone());
  p2.set_grad(g.clone());
  utils::clip_grad_value_(p1, clip_value);
  utils::clip_grad_value_({p2}, clip_value);
  ASSERT_TRUE(ag::allclose(p1.grad(), p2.grad()));
}
