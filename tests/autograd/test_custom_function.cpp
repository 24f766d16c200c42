// Custom autograd functions (autograd/function.h) against torch.autograd.Function: the numbers
// are what torch 2.15 printed for the same functions (float64).
#include <gtest/gtest.h>

#include "autograd/function.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;

namespace {

void expect_values(const Tensor& t, const std::vector<double>& want) {
  ASSERT_TRUE(t.defined());
  const std::vector<double> got = t.to_double_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
}

struct MyExp : autograd::Function<MyExp> {
  static int forwards_recorded_nodes;
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = exp(x);
    forwards_recorded_nodes += y.grad_fn() != nullptr;  // forward runs with grad mode off
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const Tensor y = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * y};  // written with ops: differentiable again
  }
};
int MyExp::forwards_recorded_nodes = 0;

// x * w * scale, scale a plain double (no gradient); w (3) is broadcast against x (2, 3).
struct ScaledMul : autograd::Function<ScaledMul> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, double scale) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["scale"] = scale;
    EXPECT_TRUE(ctx->needs_input_grad(0));
    return x * w * scale;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const double scale = ctx->saved_data["scale"].toDouble();
    // w's gradient has x's shape (2, 3): the function sums it to w's (3), as torch does.
    return {g[0] * saved[1] * scale, g[0] * saved[0] * scale, Tensor()};
  }
};

// Two outputs, exp(x) and x², saving an input and an output.
struct ExpAndSquare : autograd::Function<ExpAndSquare> {
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    Tensor e = exp(x);
    ctx->save_for_backward({x, e});
    return {e, x * x};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    return {g[0] * saved[1] + g[1] * 2.0 * saved[0]};
  }
};

}  // namespace

// x = [0.5, -1, 2]; (MyExp(x) * [1, 2, 3]).sum().backward()
TEST(CustomFunction, ForwardAndBackwardAsTorch) {
  Tensor x = leaf({0.5, -1.0, 2.0});
  MyExp::forwards_recorded_nodes = 0;
  Tensor y = MyExp::apply(x);
  EXPECT_EQ(MyExp::forwards_recorded_nodes, 0);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->op, "(anonymous namespace)::MyExp");
  EXPECT_EQ(y.grad_fn()->next.size(), 1u);  // one node: the ops inside forward are not recorded
  sum(y * Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}, DType::Float64)).backward();
  expect_values(x.grad(), {1.6487212707001282, 0.7357588823428847, 22.16716829679195});
}

// g = grad(MyExp(x).sum(), x, create_graph=True); grad((g*g).sum(), x)
TEST(CustomFunction, DoubleBackwardThroughABackwardWrittenWithOps) {
  Tensor x = leaf({0.5, -1.0, 2.0});
  const Tensor g = grad({sum(MyExp::apply(x))}, {x}, {}, {.create_graph = true})[0];
  expect_values(grad({sum(g * g)}, {x})[0], {5.436563656918091, 0.2706705664732254, 109.19630006628849});
  const GradcheckReport first = gradcheck([](const std::vector<Tensor>& in) { return MyExp::apply(in[0]); }, {x});
  const GradcheckReport second = gradgradcheck([](const std::vector<Tensor>& in) { return MyExp::apply(in[0]); }, {x});
  EXPECT_TRUE(first.passed()) << first.table();
  EXPECT_TRUE(second.passed()) << second.table();
}

// ScaledMul(x, w, 2.5).pow(2).sum().backward()
TEST(CustomFunction, SeveralInputsANonTensorArgumentAndABroadcastGradient) {
  Tensor x = leaf({1, 2, 3, -1, 0.5, 2}, {2, 3}), w = leaf({0.5, -2, 1.5});
  sum(pow(ScaledMul::apply(x, w, 2.5), 2.0)).backward();
  expect_values(x.grad(), {3.125, 100.0, 84.375, -3.125, 25.0, 56.25});
  expect_values(w.grad(), {12.5, -106.25, 243.75});
}

// e, s = ExpAndSquare(x); (2 e.sum() + 3 (s*s).sum()).backward()
TEST(CustomFunction, SeveralOutputs) {
  Tensor x = leaf({0.5, -1.0});
  auto outs = ExpAndSquare::apply(x);
  static_assert(std::is_same_v<decltype(outs), std::vector<Tensor>>);
  (sum(outs[0]) * 2.0 + sum(outs[1] * outs[1]) * 3.0).backward();
  expect_values(x.grad(), {4.797442541400256, -11.264241117657114});
  // Only one output used: the other's gradient is zeros (torch: [1, -2] = 2x).
  auto again = ExpAndSquare::apply(x);
  expect_values(grad({sum(again[1])}, {x})[0], {1.0, -2.0});
  // Double backward, with the saved output e back in the graph.
  auto third = ExpAndSquare::apply(x);
  const Tensor g = grad({sum(third[0]) + sum(third[1])}, {x}, {}, {.create_graph = true})[0];
  expect_values(g, {2.648721270700128, -1.6321205588285577});
  expect_values(grad({sum(g * g)}, {x})[0], {19.32889128111886, -7.729329433526774});
  const GradcheckReport second =
      gradgradcheck([](const std::vector<Tensor>& in) { return concat(ExpAndSquare::apply(in[0]), 0); }, {x});
  EXPECT_TRUE(second.passed()) << second.table();
}

namespace {
struct TooFew : autograd::Function<TooFew> {
  static Tensor forward(AutogradContext*, const Tensor& x, const Tensor& y) { return x * y; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list) { return {Tensor::ones({3}, DType::Float64)}; }
};
struct GradForADouble : autograd::Function<GradForADouble> {
  static Tensor forward(AutogradContext*, const Tensor& x, double) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};
}  // namespace

TEST(CustomFunction, AWrongGradientThrowsNamingTheFunction) {
  Tensor x = leaf({1, 2}), y = leaf({3, 4});
  EXPECT_EQ(error_of([&] { sum(TooFew::apply(x, y)).backward(); }),
            "function (anonymous namespace)::TooFew returned an incorrect number of gradients (expected 2, got 1)");
  EXPECT_EQ(error_of([&] { sum(WrongShape::apply(x)).backward(); }),
            "Function (anonymous namespace)::WrongShape returned an invalid gradient at index 0 - got [3] but expected "
            "shape compatible with [2]");
  EXPECT_EQ(error_of([&] { sum(GradForADouble::apply(x, 1.0)).backward(); }),
            "function (anonymous namespace)::GradForADouble returned a gradient that is defined at position 2, but the "
            "corresponding forward input was not a Tensor");
}

TEST(CustomFunction, SavedVariablesAreVersionCheckedAndFreedAfterBackward) {
  Tensor x = leaf({0.5, -1.0});
  Tensor y = MyExp::apply(x);
  {
    NoGradGuard no_grad;
    y.detach().fill_(1.0);  // an in-place write to the saved output
  }
  const std::string msg = error_of([&] { sum(y).backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MyExp"), std::string::npos) << msg;

  Tensor z = MyExp::apply(x);
  sum(z).backward();
  EXPECT_NE(error_of([&] { sum(z).backward(); }).find("Trying to backward through the graph a second time"),
            std::string::npos);
  Tensor r = MyExp::apply(x);
  sum(r).backward({}, {.retain_graph = true});
  sum(r).backward();  // retained: works again
}

namespace {
// Saves nothing: a second backward through it works, as through torch's.
struct Double : autograd::Function<Double> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0}; }
};
// Values and their argmax: int64 outputs never require grad; mark_non_differentiable for a float one.
struct WithIndex : autograd::Function<WithIndex> {
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    Tensor sign = Tensor::from_vector(std::vector<double>{1.0}, {1}, DType::Float64);
    ctx->mark_non_differentiable({sign});
    ctx->set_materialize_grads(false);
    return {x * 3.0, argmax(x, 0), sign};
  }
  static variable_list backward(AutogradContext*, variable_list g) {
    EXPECT_FALSE(g[1].defined());  // no zeros when materialize_grads is false
    EXPECT_FALSE(g[2].defined());
    return {g[0] * 3.0};
  }
};
// Returns its input itself: the output is a new handle, the input keeps no history.
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};
}  // namespace

TEST(CustomFunction, NonDifferentiableOutputsAndAliases) {
  Tensor x = leaf({1.0, 4.0, -2.0});
  Tensor d = Double::apply(x);
  sum(d).backward();
  sum(d).backward();
  expect_values(x.grad(), {4, 4, 4});

  auto outs = WithIndex::apply(x);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_FALSE(outs[1].requires_grad());
  EXPECT_FALSE(outs[2].requires_grad());
  EXPECT_EQ(outs[1].item(), 1.0);
  x.zero_grad();
  sum(outs[0]).backward();
  expect_values(x.grad(), {3, 3, 3});

  Tensor y = Identity::apply(x);
  EXPECT_FALSE(y.same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(y.raw_data(), x.raw_data());
  x.zero_grad();
  sum(y).backward();
  expect_values(x.grad(), {1, 1, 1});
}

TEST(CustomFunction, UnderNoGradNothingIsRecorded) {
  Tensor x = leaf({0.5});
  NoGradGuard no_grad;
  Tensor y = MyExp::apply(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(y.grad_fn());
}
