// Higher-order gradients: ag::grad, backward(create_graph), and gradgradcheck (float64,
// torch.autograd.gradgradcheck's criterion) for every op of autograd/ops.h, the fused ones
// under each of their variants.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"

using namespace ag;

namespace {
Generator& gen() {
  static Generator g(77);
  return g;
}
Tensor rnd(Shape s, double lo = -1, double hi = 1) { return Tensor::rand(s, DType::Float64, gen(), lo, hi).requires_grad_(); }
Tensor positive(Shape s) { return rnd(s, 0.5, 2.0); }
using V = const std::vector<Tensor>&;

void expect_gradgradcheck(const GradcheckFn& f, const std::vector<Tensor>& in) {
  const GradcheckReport r = gradgradcheck(f, in);
  EXPECT_TRUE(r.passed()) << r.table();
}
void expect_both(const GradcheckFn& f, const std::vector<Tensor>& in) {
  const GradcheckReport r1 = gradcheck(f, in);
  EXPECT_TRUE(r1.passed()) << r1.table();
  expect_gradgradcheck(f, in);
}
}  // namespace

// ---- ag::grad and create_graph semantics -------------------------------------------------------

TEST(HigherOrder, GradReturnsGradientsAndLeavesDotGradUntouched) {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}, DType::Float64).requires_grad_();
  Tensor y = sum(mul(mul(x, x), x));  // Σ x³
  const auto g = grad({y}, {x});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].to_double_vector(), (std::vector<double>{3, 12, 27}));  // 3x²
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(g[0].requires_grad());  // no create_graph: a plain tensor
  // retain_graph defaults to false: the graph is freed.
  EXPECT_THROW(grad({y}, {x}), std::runtime_error);
}

TEST(HigherOrder, DerivativesToThirdOrderOfACube) {
  Tensor x = Tensor::from_vector(std::vector<double>{-1.5, 0.5, 2}, {3}, DType::Float64).requires_grad_();
  Tensor y = sum(mul(mul(x, x), x));
  const Tensor g1 = grad({y}, {x}, {}, {.create_graph = true})[0];  // 3x²
  ASSERT_TRUE(g1.requires_grad());
  const Tensor g2 = grad({sum(g1)}, {x}, {}, {.create_graph = true})[0];  // 6x
  const Tensor g3 = grad({sum(g2)}, {x}, {}, {.create_graph = true})[0];  // 6
  const auto v1 = g1.to_double_vector(), v2 = g2.to_double_vector(), v3 = g3.to_double_vector();
  for (int i = 0; i < 3; ++i) {
    const double xi = x.at({i});
    EXPECT_DOUBLE_EQ(v1[i], 3 * xi * xi);
    EXPECT_DOUBLE_EQ(v2[i], 6 * xi);
    EXPECT_DOUBLE_EQ(v3[i], 6);
  }
}

TEST(HigherOrder, BackwardWithCreateGraphGivesADifferentiableDotGrad) {
  Tensor x = Tensor::from_vector(std::vector<double>{0.3, -0.7}, {2}, DType::Float64).requires_grad_();
  sum(exp(mul(x, x))).backward({}, {.create_graph = true});  // x.grad = 2x·exp(x²)
  Tensor gx = x.grad();
  ASSERT_TRUE(gx.requires_grad());
  x.set_grad(Tensor());  // breaks the x -> .grad -> graph -> x cycle before the next pass
  const Tensor h = grad({sum(gx)}, {x})[0];  // d/dx 2x·exp(x²) = (2 + 4x²)·exp(x²)
  for (int i = 0; i < 2; ++i) {
    const double xi = x.at({i});
    EXPECT_NEAR(h.at({i}), (2 + 4 * xi * xi) * std::exp(xi * xi), 1e-12);
  }
}

TEST(HigherOrder, UnusedInputsThrowUnlessAllowed) {
  Tensor x = rnd({2}), z = rnd({2});
  Tensor y = sum(mul(x, x));
  const std::string msg = [&] {
    try {
      grad({y}, {x, z}, {}, {.retain_graph = true});
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(msg.find("allow_unused"), std::string::npos) << msg;
  const auto g = grad({y}, {x, z}, {}, {.retain_graph = true, .allow_unused = true});
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
  EXPECT_THROW(grad({y}, {Tensor::ones({2}, DType::Float64)}), std::invalid_argument);  // does not require grad
}

TEST(HigherOrder, GradWithRespectToAnIntermediateAndSeveralOutputs) {
  Tensor x = rnd({3});
  Tensor h = mul(x, 2.0);
  Tensor y1 = sum(mul(h, h)), y2 = sum(h);
  const auto g = grad({y1, y2}, {h, x}, {Tensor::scalar(1.0, DType::Float64), Tensor::scalar(3.0, DType::Float64)});
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(g[0].at({i}), 2 * h.at({i}) + 3);
    EXPECT_DOUBLE_EQ(g[1].at({i}), 2 * (2 * h.at({i}) + 3));
  }
}

// Hessian-vector product of f(W) = Σ tanh(x·Wᵀ)² against central differences of the gradient.
TEST(HigherOrder, HessianVectorProductMatchesDifferencesOfTheGradient) {
  Tensor x = rnd({4, 3}), W = rnd({2, 3}), v = Tensor::rand({2, 3}, DType::Float64, gen(), -1, 1);
  auto f = [&](const Tensor& w) { return sum(pow(tanh(linear(x.detach(), w)), 2.0)); };
  const Tensor g = grad({f(W)}, {W}, {}, {.create_graph = true})[0];
  const Tensor hv = grad({sum(mul(g, v))}, {W})[0];
  const double eps = 1e-6;
  const Tensor wp = add(W.detach(), mul(v, eps)).requires_grad_(), wm = sub(W.detach(), mul(v, eps)).requires_grad_();
  const auto gp = grad({f(wp)}, {wp})[0].to_double_vector(), gm = grad({f(wm)}, {wm})[0].to_double_vector();
  const auto hvv = hv.to_double_vector();
  for (size_t i = 0; i < hvv.size(); ++i) EXPECT_NEAR(hvv[i], (gp[i] - gm[i]) / (2 * eps), 1e-7);
}

TEST(HigherOrder, NoNodesLeakAfterDoubleBackward) {
  const int64_t before = Node::live_count();
  {
    Tensor x = rnd({3, 3});
    Tensor y = sum(softmax(tanh(matmul(x, x))));
    const Tensor g = grad({y}, {x}, {}, {.create_graph = true})[0];
    const Tensor h = grad({sum(mul(g, g))}, {x})[0];
    EXPECT_TRUE(h.defined());
  }
  EXPECT_EQ(Node::live_count(), before);
}

// ---- gradgradcheck of every op ------------------------------------------------------------------

TEST(GradGradcheck, ElementwiseBinaryWithBroadcasting) {
  Tensor a = rnd({2, 3}), b = positive({2, 3}), row = positive({3}), s = positive({});
  expect_gradgradcheck([](V x) { return add(x[0], x[1]); }, {a, row});
  expect_gradgradcheck([](V x) { return sub(x[1], x[0]); }, {a, row});
  expect_gradgradcheck([](V x) { return mul(x[0], x[1]); }, {a, b});
  expect_gradgradcheck([](V x) { return mul(x[0], x[1]); }, {a, row});
  expect_gradgradcheck([](V x) { return mul(x[0], x[1]); }, {a, s});
  expect_gradgradcheck([](V x) { return div(x[0], x[1]); }, {a, b});
  expect_gradgradcheck([](V x) { return div(x[0], x[1]); }, {a, row});
  expect_gradgradcheck([](V x) { return mul(x[0], x[0]); }, {a});  // the same tensor twice
}

TEST(GradGradcheck, ElementwiseUnaryAndScalar) {
  Tensor a = rnd({2, 3}), p = positive({2, 3});
  expect_gradgradcheck([](V x) { return neg(x[0]); }, {a});
  expect_gradgradcheck([](V x) { return add(x[0], 2.5); }, {a});
  expect_gradgradcheck([](V x) { return mul(x[0], -1.5); }, {a});
  expect_gradgradcheck([](V x) { return rsub(2.0, x[0]); }, {a});
  expect_gradgradcheck([](V x) { return rdiv(2.0, x[0]); }, {p});
  expect_gradgradcheck([](V x) { return pow(x[0], 3.0); }, {a});
  expect_gradgradcheck([](V x) { return pow(x[0], 2.5); }, {p});
  expect_gradgradcheck([](V x) { return pow(x[0], -1.0); }, {p});
  expect_gradgradcheck([](V x) { return exp(x[0]); }, {a});
  expect_gradgradcheck([](V x) { return log(x[0]); }, {p});
  expect_gradgradcheck([](V x) { return sqrt(x[0]); }, {p});
  expect_gradgradcheck([](V x) { return tanh(x[0]); }, {a});
  // relu away from its kink (numeric differences straddling 0 would be meaningless)
  Tensor away = Tensor::from_vector(std::vector<double>{-0.8, 0.3, 1.2, -0.4, 0.9, -1.1}, {2, 3}, DType::Float64)
                    .requires_grad_();
  expect_gradgradcheck([](V x) { return mul(relu(x[0]), x[0]); }, {away});
}

TEST(GradGradcheck, GeluBothForms) {
  Tensor a = rnd({2, 4}, -3, 3);
  expect_gradgradcheck([](V x) { return gelu(x[0]); }, {a});
  expect_gradgradcheck([](V x) { return gelu(x[0], /*approximate=*/true); }, {a});
}

TEST(GradGradcheck, ThirdOrderOfGeluAndSoftmaxThroughNestedGrad) {
  // d³/dx³ of Σ gelu(x) checked as the gradgradcheck of its first derivative.
  Tensor a = rnd({5}, -2, 2);
  for (bool approx : {false, true}) {
    expect_gradgradcheck(
        [approx](V x) {
          EnableGradGuard on;
          return grad({sum(gelu(x[0], approx))}, {x[0]}, {}, {.create_graph = true})[0];
        },
        {a});
  }
  expect_gradgradcheck(
      [](V x) {
        EnableGradGuard on;
        return grad({sum(mul(softmax(x[0]), x[0]))}, {x[0]}, {}, {.create_graph = true})[0];
      },
      {rnd({2, 3})});
}

TEST(GradGradcheck, Reductions) {
  Tensor a = rnd({2, 3, 4});
  expect_gradgradcheck([](V x) { return mul(sum(x[0]), sum(x[0])); }, {a});
  expect_gradgradcheck([](V x) { return pow(sum(x[0], {1}), 2.0); }, {a});
  expect_gradgradcheck([](V x) { return pow(mean(x[0], {0, 2}, true), 2.0); }, {a});
  expect_gradgradcheck([](V x) { return mul(mean(x[0]), x[0]); }, {a});
}

TEST(GradGradcheck, MatmulAndLinear) {
  expect_gradgradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 3}), rnd({3, 4})});
  expect_gradgradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 2, 3}), rnd({3, 2})});  // broadcast batch
  expect_gradgradcheck([](V x) { return matmul(transpose(x[0], 0, 1), x[1]); }, {rnd({3, 2}), rnd({3, 2})});
  expect_gradgradcheck([](V x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 2, 3}), rnd({4, 3}), rnd({4})});
  expect_gradgradcheck([](V x) { return linear(x[0], x[1]); }, {rnd({3, 3}), rnd({2, 3})});
  expect_gradgradcheck([](V x) { return linear(transpose(x[0], 0, 1), x[1]); }, {rnd({3, 2}), rnd({2, 3})});
}

TEST(GradGradcheck, ShapeOps) {
  Tensor a = rnd({2, 3, 4});
  auto sq = [](const Tensor& t) { return mul(t, t); };  // makes the second derivative non-zero
  expect_gradgradcheck([&](V x) { return sq(reshape(x[0], {6, 4})); }, {a});
  expect_gradgradcheck([&](V x) { return sq(view(x[0], {4, 6})); }, {a});
  expect_gradgradcheck([&](V x) { return sq(transpose(x[0], 0, 2)); }, {a});
  expect_gradgradcheck([&](V x) { return sq(permute(x[0], {2, 0, 1})); }, {a});
  expect_gradgradcheck([&](V x) { return sq(narrow(x[0], 1, 1, 2)); }, {a});
  expect_gradgradcheck([&](V x) { return sq(narrow(x[0], 2, 0, 1)); }, {a});
  expect_gradgradcheck([&](V x) { return sq(unsqueeze(x[0], 1)); }, {a});
  expect_gradgradcheck([&](V x) { return sq(squeeze(x[0], 0)); }, {rnd({1, 3})});
  expect_gradgradcheck([&](V x) { return sq(concat({x[0], x[1]}, 1)); }, {rnd({2, 2}), rnd({2, 3})});
  expect_gradgradcheck([&](V x) { return sq(split(x[0], 2, 2)[1]); }, {a});
  expect_gradgradcheck([&](V x) { return sq(expand(x[0], {2, 3, 4})); }, {rnd({3, 1})});
  expect_gradgradcheck([&](V x) { return sq(x[0].clone()); }, {a});
  expect_gradgradcheck([&](V x) { return sq(transpose(x[0], 0, 1).contiguous()); }, {rnd({2, 3})});
}

TEST(GradGradcheck, LookupsAndMasks) {
  const Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0, 2}, {3});
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 3, 1, 0}, {2, 2});
  const Tensor mask = Tensor::from_vector(std::vector<bool>{true, false, false, true, false, true}, {2, 3});
  expect_gradgradcheck([idx](V x) { return pow(index_select(x[0], 1, idx), 2.0); }, {rnd({2, 3, 2})});
  expect_gradgradcheck([ids](V x) { return pow(embedding(ids, x[0]), 3.0); }, {rnd({4, 3})});
  expect_gradgradcheck([mask](V x) { return pow(masked_fill(x[0], mask, -2.0), 2.0); }, {rnd({2, 3})});
}

TEST(GradGradcheck, SoftmaxLogSoftmaxCrossEntropy) {
  Tensor a = rnd({3, 5}, -2, 2);
  expect_gradgradcheck([](V x) { return softmax(x[0]); }, {a});
  expect_gradgradcheck([](V x) { return log_softmax(x[0]); }, {rnd({2, 2, 4})});
  const Tensor t = Tensor::from_vector(std::vector<int64_t>{4, 0, 2}, {3});
  expect_gradgradcheck([t](V x) { return cross_entropy(x[0], t); }, {a});
  const Tensor ti = Tensor::from_vector(std::vector<int64_t>{1, 0, 3}, {3});
  expect_gradgradcheck([ti](V x) { return cross_entropy(x[0], ti, {.ignore_index = 0}); }, {a});
}

TEST(GradGradcheck, LayerNormAndDropout) {
  expect_gradgradcheck([](V x) { return layer_norm(x[0], x[1], x[2]); }, {rnd({2, 3, 5}), rnd({5}), rnd({5})});
  expect_gradgradcheck([](V x) { return layer_norm(x[0], Tensor(), Tensor()); }, {rnd({3, 4})});
  expect_gradgradcheck([](V x) { return layer_norm(x[0], x[1], Tensor()); }, {rnd({4}), rnd({4})});  // 1-d input
  // dropout with a fixed generator: the same mask on every evaluation
  expect_gradgradcheck(
      [](V x) {
        Generator g(5);
        return mul(dropout(x[0], 0.4, true, g), x[0]);
      },
      {rnd({3, 4})});
}

TEST(GradGradcheck, AttentionProbsUnderEveryMaskSetting) {
  Tensor q = rnd({2, 3, 4}), k = rnd({2, 3, 4});
  const double scale = 0.5;
  expect_gradgradcheck([scale](V x) { return attention_probs(x[0], x[1], Tensor(), scale, false); }, {q, k});
  expect_gradgradcheck([scale](V x) { return attention_probs(x[0], x[1], Tensor(), scale, true); }, {q, k});
  Tensor k5 = rnd({2, 5, 4});  // decoding with a cache: 3 queries at positions 2..4 of 5 keys
  expect_gradgradcheck([scale](V x) { return attention_probs(x[0], x[1], Tensor(), scale, true, 2); }, {q, k5});
  // a float mask with -inf entries (fixed) and a finite learned bias (differentiated)
  Tensor fixed = Tensor::from_vector(std::vector<double>{0, -INFINITY, 0, 0, 0, -INFINITY, 0.5, 0, 0}, {3, 3}, DType::Float64);
  expect_gradgradcheck([scale, fixed](V x) { return attention_probs(x[0], x[1], fixed, scale, false); }, {q, k});
  expect_gradgradcheck([scale](V x) { return attention_probs(x[0], x[1], x[2], scale, false); }, {q, k, rnd({3, 3})});
  expect_gradgradcheck([scale](V x) { return attention_probs(x[0], x[1], x[2], scale, true); }, {q, k, rnd({2, 3, 3})});
}

// ---- item 6: the mask's gradient is no longer dropped -------------------------------------------

TEST(AttentionMaskGrad, FloatMaskThatRequiresGradIsGradchecked) {
  Tensor q = rnd({2, 3, 4}), k = rnd({2, 4, 4});
  const double scale = 0.7;
  expect_both([scale](V x) { return attention_probs(x[0], x[1], x[2], scale, false); }, {q, k, rnd({3, 4})});
  expect_both([scale](V x) { return attention_probs(x[0], x[1], x[2], scale, true, 1); }, {q, k, rnd({2, 3, 4})});
  // only the mask requires grad
  Tensor qc = q.detach(), kc = k.detach();
  expect_both([scale, qc, kc](V x) { return attention_probs(qc, kc, x[0], scale, false); }, {rnd({3, 4})});
}

TEST(AttentionMaskGrad, Float32KernelAgreesWithTheFloat64Formula) {
  Tensor q = Tensor::randn({2, 3, 4}, DType::Float32, gen()), k = Tensor::randn({2, 3, 4}, DType::Float32, gen());
  Tensor m = Tensor::randn({3, 3}, DType::Float32, gen()).requires_grad_();
  Tensor up = Tensor::randn({2, 3, 3}, DType::Float32, gen());
  sum(mul(attention_probs(q, k, m, 0.5, true), up)).backward();
  Tensor m64 = m.detach().to(DType::Float64).requires_grad_();
  sum(mul(attention_probs(q.to(DType::Float64), k.to(DType::Float64), m64, 0.5, true), up.to(DType::Float64))).backward();
  const auto a = m.grad().to_double_vector(), b = m64.grad().to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(AttentionMaskGrad, MultiheadAttentionLearnedFloatMasksFirstAndSecondOrder) {
  Generator g(11);
  auto mha = std::make_shared<nn::MultiheadAttention>(4, 2, 0.0, true, /*batch_first=*/true, DType::Float64, g);
  Tensor x = rnd({2, 3, 4});
  // a 2-d (L, S) bias, a 3-d (N·H, L, S) bias, and a float key_padding_mask (N, S), each learned
  expect_both([mha](V in) { return mha->forward(in[0], in[0], in[0], Tensor(), false, in[1], true, false).output; },
              {x, rnd({3, 3})});
  expect_both([mha](V in) { return mha->forward(in[0], in[0], in[0], Tensor(), false, in[1], true, true).output; },
              {x, rnd({4, 3, 3})});
  expect_both([mha](V in) { return mha->forward(in[0], in[0], in[0], in[1], false, Tensor(), true, false).output; },
              {x, rnd({2, 3})});
  // with a bool padding mask folded in beside the learned bias
  const Tensor pad = Tensor::from_vector(std::vector<bool>{false, false, true, false, false, false}, {2, 3});
  expect_both([mha, pad](V in) { return mha->forward(in[0], in[0], in[0], pad, false, in[1], true, false).output; },
              {x, rnd({3, 3})});
}

// The example of docs/autograd_engine.md.
TEST(HigherOrder, DocsHessianVectorProductExample) {
  Tensor x = Tensor::from_vector(std::vector<double>{0.5, -1.0}, {2}, DType::Float64).requires_grad_();
  Tensor v = Tensor::from_vector(std::vector<double>{1.0, 2.0}, {2}, DType::Float64);
  Tensor y = sum(mul(pow(x, 3.0), x));
  Tensor g = grad({y}, {x}, {}, {.create_graph = true})[0];
  Tensor hv = grad({sum(mul(g, v))}, {x})[0];
  EXPECT_EQ(hv.to_double_vector(), (std::vector<double>{3, 24}));
}

// The whole model twice differentiated: a 1-layer TransformerLM's loss (embedding, layer_norm,
// packed attention, GELU MLP, tied head, cross_entropy), gradgradchecked w.r.t. two parameters.
TEST(GradGradcheck, TinyTransformerLMLoss) {
  models::GPTConfig cfg;
  cfg.vocab_size = 5, cfg.n_layer = 1, cfg.n_head = 2, cfg.n_embd = 4, cfg.block_size = 4;
  Generator g(3);
  auto model = std::make_shared<models::TransformerLM>(cfg, DType::Float64, g);
  const Tensor idx = Tensor::from_vector(std::vector<int64_t>{1, 4, 0, 2}, {1, 4});
  const Tensor tgt = Tensor::from_vector(std::vector<int64_t>{4, 0, 2, 3}, {1, 4});
  std::map<std::string, Tensor> params;
  for (const auto& [name, p] : model->named_parameters()) params[name] = p;
  for (const char* name : {"blocks.0.attn.in_proj_weight", "blocks.0.ln1.weight"}) {
    ASSERT_TRUE(params.count(name)) << name;
    expect_gradgradcheck([model, idx, tgt](V) { return model->loss(idx, tgt); }, {params[name]});
  }
}
