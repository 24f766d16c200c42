// Node hooks (engine.h: torch's grad_fn.register_prehook / register_hook and its AccumulateGrad
// node's), the hooks of a multi-output op's siblings, and a custom Function that modifies its input
// in place (mark_dirty). The orders and values are torch 2.15's for the same graphs (the Python
// tests compare many more with torch-made fixtures: python/tests/upstream/).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/ops.h"
#include "autograd/tensor_data.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;

namespace {

// After torch's test_prehook_ordering (test_autograd.py): on b = a.clone(), tensor hooks (each
// ×3, logged 'T') run before node pre-hooks (each ×2, logged 'N'), on b's node and on a's
// AccumulateGrad alike, whatever order they were registered in; grad() runs no AccumulateGrad;
// backward(inputs=b) runs b's node pre-hooks after b's .grad took its value.
TEST(NodeHooks, RunInTorchsOrder) {
  std::string order;
  auto tripling_tensor_hook = [&](const Tensor& g) {
    order += 'T';
    return mul(g, 3.0);
  };
  auto doubling_node_prehook = [&](const Grads& incoming) {
    order += 'N';
    return Grads{mul(incoming[0], 2.0)};
  };
  Tensor a = leaf({1.0});
  Tensor b = a.clone();
  // interleaved on purpose: the order they run in is torch's, not this one
  add_node_pre_hook(b.grad_fn()->node_hooks, doubling_node_prehook);
  b.register_hook(GradHook(tripling_tensor_hook));
  add_node_pre_hook(b.grad_fn()->node_hooks, doubling_node_prehook);
  a.register_hook(GradHook(tripling_tensor_hook));
  add_node_pre_hook(a.impl().accumulate_grad_hooks, doubling_node_prehook);
  a.register_hook(GradHook(tripling_tensor_hook));

  b.sum().backward({}, {.retain_graph = true});
  EXPECT_EQ(order, "TNNTTN");
  EXPECT_DOUBLE_EQ(a.grad().item(), 216.0);  // 3·2·2 at b, 3·3·2 at a

  order.clear();
  grad({b.sum()}, {a}, {}, {.retain_graph = true});
  EXPECT_EQ(order, "TNNTT");

  order.clear();
  b.sum().backward({}, {.inputs = {b}});
  EXPECT_EQ(order, "TNN");
  EXPECT_DOUBLE_EQ(b.grad().item(), 3.0);
}

// torch's test_post_accumulate_grad_hook_ordering: ((1 − 2) / 5 + 0.5) · 10 = 3.
TEST(NodeHooks, AccumulateGradPostHookSeesTheAccumulatedGradient) {
  Tensor t = leaf({0.25, 0.5, 0.75}, {3});
  t.register_hook(GradHook([](const Tensor& g) { return g.sub(2.0); }));
  add_node_pre_hook(t.impl().accumulate_grad_hooks, [](const Grads& g) { return Grads{g[0].div(5.0)}; });
  t.register_post_accumulate_grad_hook([](const Tensor& leaf) {
    NoGradGuard no_grad;
    leaf.grad().add_(0.5);
  });
  add_node_post_hook(t.impl().accumulate_grad_hooks, [&](const Grads& grad_in, const Grads& grad_out) {
    EXPECT_TRUE(grad_in.empty());
    t.set_grad(mul(grad_out[0], 10.0));
    return Grads{};
  });
  t.sum().backward();
  EXPECT_EQ(t.grad().to_double_vector(), (std::vector<double>{3.0, 3.0, 3.0}));
}

// A post-hook may replace what the node's backward returned; a pre-hook what it receives.
TEST(NodeHooks, ReplaceGradients) {
  Tensor x = leaf({2.0});
  Tensor y = mul(x, x);  // dy/dx = 2x = 4
  add_node_post_hook(y.grad_fn()->node_hooks, [](const Grads& grad_in, const Grads& grad_out) {
    EXPECT_DOUBLE_EQ(grad_out[0].item(), 1.0);
    return Grads{add(grad_in[0], 1.0), grad_in[1]};
  });
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), (2.0 + 1.0) + 2.0);  // both inputs are x; the first one's is changed

  Tensor z = mul(x, 3.0);
  add_node_pre_hook(z.grad_fn()->node_hooks, [](const Grads&) { return Grads{Tensor::full({1}, 2.0, DType::Float64)}; });
  EXPECT_DOUBLE_EQ(grad({z}, {x})[0].item(), 6.0);
  add_node_pre_hook(z.grad_fn()->node_hooks, [](const Grads&) { return Grads{Tensor::ones({2}, DType::Float64)}; });
  EXPECT_NE(error_of<std::exception>([&] { grad({z}, {x}); }).find("pre-hook of"), std::string::npos);
}

// torch's test_grad_nonleaf_register_hook: a hook on one piece of unbind sees None when only
// another piece gets a gradient (the op's node runs in torch, its pieces' nodes here).
TEST(NodeHooks, SiblingWithoutGradientSeesUndefined) {
  Tensor x = leaf({1.0, 2.0, 3.0}, {3});
  std::vector<Tensor> pieces = unbind(x);
  std::vector<bool> seen;
  pieces[0].register_hook(GradHook([&](const Tensor& g) {
    seen.push_back(g.defined());
    return Tensor();
  }));
  pieces[0].backward();
  pieces[1].backward();
  pieces[2].backward();
  EXPECT_EQ(seen, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{1.0, 1.0, 1.0}));
}

// A function that doubles its input in place and says so (torch's mark_dirty): the input is the
// output, its history through the function; a leaf that requires grad cannot be one.
struct DoubleInPlace : autograd::Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {mul(g[0], 2.0)}; }
};

TEST(MarkDirty, TheInputTakesTheFunctionsHistory) {
  Tensor a = leaf({1.0, 2.0}, {2});
  Tensor b = mul(a, 3.0);
  Tensor out = DoubleInPlace::apply(b);
  EXPECT_TRUE(out.same(b));
  EXPECT_NE(b.grad_fn()->op.find("DoubleInPlace"), std::string::npos);
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{6.0, 12.0}));
  b.sum().backward();
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{6.0, 6.0}));
  EXPECT_NE(error_of<std::exception>([&] { DoubleInPlace::apply(a); }).find("a leaf Variable that requires grad has been used in an "
                                                             "in-place operation."),
            std::string::npos);
}

TEST(MarkDirty, AViewsBaseTakesTheNewHistory) {
  Tensor a = leaf({1.0, 2.0, 3.0, 4.0}, {4});
  Tensor base = mul(a, 1.0);
  Tensor view = narrow(base, 0, 1, 2);
  EXPECT_TRUE(DoubleInPlace::apply(view).same(view));
  mul(base, ag::tensor({1.0, 10.0, 100.0, 1000.0}, DType::Float64)).sum().backward();
  EXPECT_EQ(base.to_double_vector(), (std::vector<double>{1.0, 4.0, 6.0, 4.0}));
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{1.0, 20.0, 200.0, 1000.0}));  // torch's
}

}  // namespace
