// Each derivative is written once: a backward function calls its backward op (or fused_backward)
// whatever the grad mode. Without create_graph that runs the fast kernel and records nothing;
// with it, the same kernel's values come back recorded as the backward op's node, so higher
// derivatives flow through the backward op's own backward (or the fused op's definition).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::max_rel;

namespace {
Generator& gen() {
  static Generator g(11);
  return g;
}
Tensor rnd(Shape s) { return Tensor::randn(s, DType::Float64, gen()).requires_grad_(); }

// The ops met walking down from t's node through its first inputs: "reshape", "narrow", ...
std::string first_path(const Tensor& t) {
  std::string path;
  for (const Node* n = t.grad_fn().get(); n; n = n->next.empty() ? nullptr : n->next[0].node.get())
    path += (path.empty() ? "" : " <- ") + n->op;
  return path;
}

struct Case {
  std::string name;
  std::function<Tensor(const Tensor&)> f;  // of one input (x)
  Shape shape;
  std::string backward_op;  // the node that the create_graph gradient comes from
};
}  // namespace

TEST(BackwardOps, CreateGraphRecordsTheBackwardOpWithTheKernelsValues) {
  const Tensor w = rnd({5, 4}), w2 = rnd({3, 5});
  const std::vector<Case> cases = {
      {"tanh", [](const Tensor& x) { return tanh(x); }, {3, 4}, "tanh_backward"},
      {"relu", [](const Tensor& x) { return relu(x); }, {3, 4}, "threshold_backward"},
      {"gelu", [](const Tensor& x) { return gelu(x); }, {3, 4}, "gelu_backward"},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, true); }, {3, 4}, "gelu_tanh_backward"},
      {"softmax", [](const Tensor& x) { return softmax(x); }, {3, 4}, "softmax_backward"},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x); }, {3, 4}, "log_softmax_backward"},
      {"narrow", [](const Tensor& x) { return narrow(x, 1, 1, 2); }, {3, 4}, "slice_backward"},
      {"layer_norm", [](const Tensor& x) { return layer_norm(x, Tensor(), Tensor()); }, {3, 4}, "layer_norm_backward"},
      {"self_attention_qkv", [](const Tensor& x) { return self_attention_qkv(x, 2, true); }, {2, 3, 12},
       "self_attention_qkv_backward"},
      {"gelu_mlp", [&](const Tensor& x) { return gelu_mlp(x, w, Tensor(), w2, Tensor()); }, {3, 4}, "gelu_mlp_backward"},
  };
  for (const Case& c : cases) {
    const Tensor x = rnd(c.shape);
    const Tensor y = c.f(x);
    // The upstream gradient requires grad too, so that a backward linear in it (narrow's) is recorded.
    const Tensor up = Tensor::randn(y.shape(), DType::Float64, gen()).requires_grad_();
    const Tensor plain = grad({y}, {x}, {up}, {.retain_graph = true})[0];
    EXPECT_FALSE(plain.requires_grad()) << c.name << ": recorded without create_graph";
    const Tensor recorded = grad({y}, {x}, {up}, {.create_graph = true})[0];
    ASSERT_TRUE(recorded.requires_grad()) << c.name;
    EXPECT_NE(first_path(recorded).find(c.backward_op), std::string::npos) << c.name << ": " << first_path(recorded);
    EXPECT_EQ(recorded.to_double_vector(), plain.to_double_vector()) << c.name << ": not the kernel's values";
  }
}

// Third derivatives go through the backward op's own backward (tanh, softmax) or through the
// definition, differentiated again (gelu_mlp, layer_norm): each against the same function written
// with plain ops, x ↦ Σ c ⊙ f(x), differentiated three times along v.
TEST(BackwardOps, ThirdDerivativesEqualThoseOfTheCompositions) {
  const Tensor w1 = rnd({5, 4}), b1 = rnd({5}), w2 = rnd({3, 5}), b2 = rnd({3}), lw = rnd({4}), lb = rnd({4});
  struct Pair {
    std::string name;
    std::function<Tensor(const Tensor&)> fused, plain;
    Shape out;
  };
  const std::vector<Pair> pairs = {
      {"tanh", [](const Tensor& x) { return tanh(x); },
       [](const Tensor& x) { return div(add(exp(mul(x, 2.0)), -1.0), add(exp(mul(x, 2.0)), 1.0)); }, {3, 4}},
      {"softmax", [](const Tensor& x) { return softmax(x); },
       [](const Tensor& x) { return div(exp(x), sum(exp(x), {-1}, true)); }, {3, 4}},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x); },
       [](const Tensor& x) { return sub(x, log(sum(exp(x), {-1}, true))); }, {3, 4}},
      {"gelu_mlp", [&](const Tensor& x) { return gelu_mlp(x, w1, b1, w2, b2); },
       [&](const Tensor& x) { return linear(gelu(linear(x, w1, b1)), w2, b2); }, {3, 3}},
      {"layer_norm", [&](const Tensor& x) { return layer_norm(x, lw, lb); },
       [&](const Tensor& x) {
         const Tensor xc = sub(x, mean(x, {-1}, true));
         return add(mul(div(xc, sqrt(add(mean(mul(xc, xc), {-1}, true), 1e-5))), lw), lb);
       },
       {3, 4}},
  };
  for (const Pair& p : pairs) {
    const Tensor x0 = Tensor::randn({3, 4}, DType::Float64, gen()), c = Tensor::randn(p.out, DType::Float64, gen());
    const Tensor v = Tensor::randn({3, 4}, DType::Float64, gen());
    auto third = [&](const std::function<Tensor(const Tensor&)>& f) {
      const Tensor x = x0.detach().clone().requires_grad_();
      const Tensor g1 = grad({sum(mul(f(x), c))}, {x}, {}, {.create_graph = true})[0];
      const Tensor g2 = grad({sum(mul(g1, v))}, {x}, {}, {.create_graph = true})[0];
      return grad({sum(mul(g2, v))}, {x})[0];
    };
    EXPECT_LT(max_rel(third(p.fused), third(p.plain)), 1e-9) << p.name;
  }
}
