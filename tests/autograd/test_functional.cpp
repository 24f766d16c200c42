// ag::autograd::functional against torch.autograd.functional: the numbers in this file are what
// torch 2.15 printed for the same functions and points (float64), and the error texts are torch's.
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/functional.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
namespace F = ag::autograd::functional;
using ag::testing_util::error_of;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& shape) { return Tensor::from_vector(v, shape, DType::Float64); }

void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& want) {
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), shape);
  const std::vector<double> got = t.to_double_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
}

// x.exp().sum(dim=1)
Tensor f1(const Tensor& x) { return sum(exp(x), {1}); }
const Tensor X = f64({0.5, -1.0, 2.0, 0.25, 1.5, -0.75}, {2, 3});

// (x**3).sum() + (x[0]*x[1]).sum()
Tensor f2(const Tensor& x) {
  return sum(pow(x, 3.0)) + sum(mul(squeeze(narrow(x, 0, 0, 1), 0), squeeze(narrow(x, 0, 1, 1), 0)));
}
const Tensor X2 = f64({0.5, -1.0, 2.0, 0.3}, {2, 2});
const Tensor V2 = f64({1.0, -1.0, 0.5, 2.0}, {2, 2});

// (2a² + 3b³ + ab).sum() at a = [1, −2], b = [0.5, 3]
Tensor g(const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  return sum(2.0 * pow(a, 2.0) + 3.0 * pow(b, 3.0) + a * b);
}
const std::vector<Tensor> AB = {f64({1.0, -2.0}, {2}), f64({0.5, 3.0}, {2})};
const std::vector<Tensor> VAB = {f64({1.0, 0.0}, {2}), f64({0.0, 2.0}, {2})};

}  // namespace

TEST(Functional, VjpAndJvpOfOneInput) {
  const auto [out, vj] = F::vjp(f1, X, f64({1.0, -2.0}, {2}));
  expect_values(out, {2}, {9.40565681080222, 6.23808103976682});
  expect_values(vj, {2, 3},
                {1.6487212707001282, 0.36787944117144233, 7.38905609893065, -2.568050833375483, -8.963378140676129,
                 -0.9447331054820294});
  const auto [out2, jv] = F::jvp(f1, X, f64({1.0, 0.5, -1.0, 2.0, 0.0, 1.0}, {2, 3}));
  expect_values(out2, {2}, {9.40565681080222, 6.23808103976682});
  expect_values(jv, {2}, {-5.556395107644801, 3.0404173861164976});
  EXPECT_FALSE(vj.requires_grad());
  EXPECT_FALSE(out.requires_grad());
}

TEST(Functional, JacobianShapesAreOutputThenInput) {
  expect_values(F::jacobian(f1, X), {2, 2, 3},
                {1.6487212707001282, 0.36787944117144233, 7.38905609893065, 0, 0, 0, 0, 0, 0, 1.2840254166877414,
                 4.4816890703380645, 0.4723665527410147});
  // f: R^(2,3) -> R^(4) gives (4, 2, 3); torch: the first five entries.
  std::vector<double> w(24);
  for (int i = 0; i < 24; ++i) w[i] = i / 10.0;
  const Tensor W = f64(w, {4, 6});
  const Tensor J = F::jacobian([&](const Tensor& x) { return tanh(matmul(W, reshape(x, {-1}))); }, X);
  ASSERT_EQ(J.shape(), (Shape{4, 2, 3}));
  const std::vector<double> first = J.to_double_vector();
  const std::vector<double> want = {0.0, 0.07115777625872229, 0.14231555251744457, 0.21347332877616684, 0.28463110503488914};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(first[i], want[i], 1e-12) << i;
  // Several inputs: one Jacobian per input, for tanh(a) * b.
  const auto Js = F::jacobian([](const std::vector<Tensor>& in) { return tanh(in[0]) * in[1]; }, AB);
  ASSERT_EQ(Js.size(), 2u);
  expect_values(Js[0], {2, 2}, {0.20998717080701307, 0, 0, 0.2119524745594933});
  expect_values(Js[1], {2, 2}, {0.7615941559557649, 0, 0, -0.9640275800758169});
}

TEST(Functional, HessianHvpAndVhp) {
  expect_values(F::hessian(f2, X2), {2, 2, 2, 2}, {3, 0, 1, 0, 0, -6, 0, 1, 1, 0, 12, 0, 0, 1, 0, 1.7999999999999998});
  const auto [out, hv] = F::hvp(f2, X2, V2);
  expect_values(out, {}, {7.852});
  expect_values(hv, {2, 2}, {3.5, 8.0, 7.0, 2.5999999999999996});
  const auto [out2, vh] = F::vhp(f2, X2, V2);
  expect_values(out2, {}, {7.852});
  expect_values(vh, {2, 2}, {3.5, 8.0, 7.0, 2.5999999999999996});
}

TEST(Functional, SeveralInputs) {
  const auto H = F::hessian(g, AB);
  ASSERT_EQ(H.size(), 2u);
  expect_values(H[0][0], {2, 2}, {4, 0, 0, 4});
  expect_values(H[0][1], {2, 2}, {1, 0, 0, 1});
  expect_values(H[1][0], {2, 2}, {1, 0, 0, 1});
  expect_values(H[1][1], {2, 2}, {9, 0, 0, 54});
  const auto [out, vj] = F::vjp(g, AB);  // v may be omitted: the output has one element
  expect_values(out, {}, {85.875});
  expect_values(vj[0], {2}, {4.5, -5.0});
  expect_values(vj[1], {2}, {3.25, 79.0});
  expect_values(F::jvp(g, AB, VAB).second, {}, {162.5});
  const auto hv = F::hvp(g, AB, VAB).second, vh = F::vhp(g, AB, VAB).second;
  expect_values(hv[0], {2}, {4, 2});
  expect_values(hv[1], {2}, {1, 108});
  expect_values(vh[0], {2}, {4, 2});
  expect_values(vh[1], {2}, {1, 108});
}

TEST(Functional, CreateGraphMakesTheResultDifferentiable) {
  Tensor x = f64({0.5, -1.0}, {2}).requires_grad_();
  auto quartic = [](const Tensor& t) { return sum(pow(t, 4.0)); };
  const auto [out, hv] = F::hvp(quartic, x, f64({1.0, 2.0}, {2}), {.create_graph = true});
  expect_values(hv, {2}, {3.0, 24.0});
  ASSERT_TRUE(hv.requires_grad());
  expect_values(grad({sum(hv)}, {x})[0], {2}, {12.0, -48.0});  // torch: d(H·v)/dx
  EXPECT_FALSE(F::hvp(quartic, x, f64({1.0, 2.0}, {2})).second.requires_grad());
}

TEST(Functional, NonStrictGivesZerosStrictThrowsTorchsMessages) {
  auto lin = [](const std::vector<Tensor>& in) { return in[0] * 2.0; };
  const auto vj = F::vjp(lin, AB, Tensor::ones({2}, DType::Float64)).second;
  expect_values(vj[0], {2}, {2, 2});
  expect_values(vj[1], {2}, {0, 0});
  auto lin_sum = [](const Tensor& a) { return sum(a * 2.0); };
  expect_values(F::hessian(lin_sum, AB[0]), {2, 2}, {0, 0, 0, 0});

  const Tensor ones = Tensor::ones({2}, DType::Float64);
  const std::string jac_of_linear =
      "While computing the hessian, found that the jacobian of the user-provided function with respect to input 0 is "
      "independent of the input. This is not allowed in strict mode. You should ensure that your function is twice "
      "differentiable and that the jacobian depends on the inputs (this would be violated by a linear function for "
      "example).";
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"The output of the user-provided function is independent of input 1. This is not allowed in strict mode.",
       [&] { F::vjp(lin, AB, ones, {.strict = true}); }},
      {"The output of the user-provided function is independent of input 1. This is not allowed in strict mode.",
       [&] { F::jvp(lin, AB, {ones, ones}, {.strict = true}); }},
      {"Output 0 of the user-provided function is independent of input 1. This is not allowed in strict mode.",
       [&] { F::jacobian(lin, AB, {.strict = true}); }},
      {jac_of_linear, [&] { F::hessian(lin_sum, AB[0], {.strict = true}); }},
      {jac_of_linear, [&] { F::hvp(lin_sum, AB[0], ones, {.strict = true}); }},
      {jac_of_linear, [&] { F::vhp(lin_sum, AB[0], ones, {.strict = true}); }},
      {"Output 0 of the user-provided function does not require gradients. The outputs must be computed in a "
       "differentiable manner from the input when running in strict mode.",
       [&] { F::vjp([&](const Tensor&) { return ones; }, AB[0], ones, {.strict = true}); }},
      {"v has invalid size: should be [2] but got [3].", [&] { F::vjp(f1, X, Tensor::ones({3}, DType::Float64)); }},
      {"The vector v can only be None if the user-provided function returns a single Tensor with a single element.",
       [&] { F::vjp(f1, X); }},
      {"v is a tuple of invalid length: should be 2 but got 1.", [&] { F::jvp(g, AB, {ones}); }},
      {"The Tensor returned by the function given to hessian should contain a single element", [&] { F::hessian(f1, X); }},
  };
  for (const auto& [want, call] : cases) EXPECT_EQ(error_of(call), want);
}

TEST(Functional, TheCallableSeesAFreshTensorAndGradModeIsRestored) {
  Tensor x = f64({1.0, 2.0}, {2}).requires_grad_();
  {
    NoGradGuard no_grad;  // the transforms record even so, as torch's enable_grad inside them
    expect_values(F::jacobian([](const Tensor& t) { return t * t; }, x), {2, 2}, {2, 0, 0, 4});
    EXPECT_FALSE(GradMode::enabled());
  }
  // A callable that uses the captured x instead of its argument differentiates nothing.
  expect_values(F::jacobian([&](const Tensor& t) { return x * 1.0 + t * 0.0; }, x), {2, 2}, {0, 0, 0, 0});
  EXPECT_FALSE(x.grad().defined());
}
