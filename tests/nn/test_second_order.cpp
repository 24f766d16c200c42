// Second order through whole modules, float64:
//  - gradgradcheck (torch.autograd.gradgradcheck's criterion) of nn::MultiheadAttention under
//    every mask setting, and of a 1-layer TransformerLM's loss;
//  - Hessian-vector products of an MHA loss and of a tiny LM loss equal to PyTorch's
//    (torch.autograd.grad(..., create_graph=True)) to 1e-10 relative, from the fixtures of
//    tests/parity/make_hvp_fixtures.py (no torch needed here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "autograd/engine.h"
#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"
#include "nn/init.h"

using namespace ag;

namespace {
using V = const std::vector<Tensor>&;

// ---- gradgradcheck of MultiheadAttention -----------------------------------------------------

struct MhaSetting {
  std::string name = {};
  bool batch_first = false, self_attention = false, need_weights = true, average = true, causal = false;
  std::string attn_mask = {};  // "", "bool", "bool3d" (N·H, L, S), "float", "float_learned"
  bool key_padding = false;
};

void check_mha_second_order(const MhaSetting& s) {
  SCOPED_TRACE(s.name);
  const int64_t E = 4, H = 2, L = 3, N = 2, S = s.self_attention ? L : 4;
  Generator g(7);
  nn::MultiheadAttention mha(E, H, 0.0, /*bias=*/true, s.batch_first, DType::Float64, g);
  nn::init::uniform_(mha.in_proj_bias, -0.5, 0.5, g);  // zero biases would hide a wrong bias gradient
  nn::init::uniform_(mha.out_proj->bias, -0.5, 0.5, g);
  auto input = [&](int64_t T) {
    return Tensor::randn(s.batch_first ? Shape{N, T, E} : Shape{T, N, E}, DType::Float64, g).requires_grad_();
  };
  std::vector<Tensor> inputs = {input(L)};
  if (!s.self_attention) {
    inputs.push_back(input(S));
    inputs.push_back(input(S));
  }
  Tensor mask, kpm;
  if (s.attn_mask == "bool")
    mask = Tensor::from_vector(
        std::vector<bool>{false, true, false, false, false, false, true, false, false, false, false, true}, {L, S});
  if (s.attn_mask == "bool3d") {
    std::vector<bool> m(N * H * L * S, false);
    for (size_t i = 0; i < m.size(); ++i) m[i] = (i % S) != 0 && (i * 7) % 5 == 0;  // key 0 always visible
    mask = Tensor::from_vector(m, {N * H, L, S});
  }
  if (s.attn_mask == "float" || s.attn_mask == "float_learned") {
    mask = Tensor::randn({L, S}, DType::Float64, g);
    if (s.attn_mask == "float_learned") {
      mask.requires_grad_();
      inputs.push_back(mask);
    }
  }
  if (s.key_padding) {
    std::vector<bool> m(N * S, false);
    m[S - 1] = true;  // entry 0 hides its last key, entry 1 none
    kpm = Tensor::from_vector(m, {N, S});
  }
  std::vector<std::string> names = {"query"};
  if (!s.self_attention) names.insert(names.end(), {"key", "value"});
  if (s.attn_mask == "float_learned") names.push_back("attn_mask");
  for (const auto& [name, p] : mha.named_parameters()) {
    inputs.push_back(p);
    names.push_back(name);
  }
  auto f = [&](V x) {
    const Tensor& q = x[0];
    const Tensor& k = s.self_attention ? x[0] : x[1];
    const Tensor& v = s.self_attention ? x[0] : x[2];
    const auto o = mha.forward(q, k, v, kpm, s.need_weights, mask, s.average, s.causal);
    if (!s.need_weights) return o.output;
    return concat({reshape(o.output, {-1}), reshape(o.weights, {-1})}, 0);
  };
  const GradcheckReport first = gradcheck(f, inputs, {}, names);
  EXPECT_TRUE(first.passed()) << first.table();
  const GradcheckReport second = gradgradcheck(f, inputs, {}, names);
  EXPECT_TRUE(second.passed()) << second.table();
}
}  // namespace

TEST(SecondOrderMha, EveryMaskSetting) {
  const std::vector<MhaSetting> settings = {
      {.name = "no mask"},
      {.name = "bool attn_mask (L, S)", .attn_mask = "bool"},
      {.name = "bool attn_mask per head (N·H, L, S)", .attn_mask = "bool3d"},
      {.name = "float attn_mask", .attn_mask = "float"},
      {.name = "float attn_mask that requires grad", .attn_mask = "float_learned"},
      {.name = "key_padding_mask", .key_padding = true},
      {.name = "causal", .causal = true},
      {.name = "causal + key_padding_mask + float mask", .causal = true, .attn_mask = "float", .key_padding = true},
      {.name = "need_weights=false", .need_weights = false, .key_padding = true},
      {.name = "per-head weights", .average = false, .attn_mask = "float_learned"},
      {.name = "batch_first self-attention, causal", .batch_first = true, .self_attention = true, .causal = true},
  };
  for (const MhaSetting& s : settings) check_mha_second_order(s);
}

// ---- gradgradcheck of a 1-layer TransformerLM loss -------------------------------------------

TEST(SecondOrderLm, OneLayerTransformerLossGradgradcheck) {
  Generator g(11);
  models::TransformerLM lm({.vocab_size = 5, .n_layer = 1, .n_head = 2, .n_embd = 4, .block_size = 4, .dropout = 0.0},
                           DType::Float64, g);
  std::vector<Tensor> params;
  std::vector<std::string> names;
  {
    NoGradGuard no_grad;  // nanoGPT's init is small (std 0.02): draw larger values everywhere
    for (auto [name, p] : lm.named_parameters()) {
      p.copy_(Tensor::randn(p.shape(), DType::Float64, g,
                            name.find("ln") != std::string::npos && name.ends_with("weight") ? 1.0 : 0.0, 0.5));
      params.push_back(p);
      names.push_back(name);
    }
  }
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 4, 0, 2, 3, 3, 1, 0}, {2, 4});
  const Tensor targets = Tensor::from_vector(std::vector<int64_t>{4, 0, 2, 1, 3, 1, 0, 4}, {2, 4});
  auto f = [&](V) { return lm.loss(ids, targets); };
  const GradcheckReport r = gradgradcheck(f, params, {}, names);
  EXPECT_TRUE(r.passed()) << r.table();
  EXPECT_EQ(r.inputs.size(), params.size() + 1);  // a row per parameter, and one for the upstream gradient
}

// ---- Hessian-vector products against PyTorch ---------------------------------------------------

namespace {
const std::string kDir = std::string(ATTOGRAD_SOURCE_DIR) + "/tests/parity/fixtures/hvp/";

void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_LE(std::fabs(va[i] - vb[i]), 1e-12 + 1e-10 * std::fabs(vb[i]))
        << what << " [" << i << "]: " << va[i] << " vs torch " << vb[i];
}

// Compares loss, gradient and H·u of loss_fn over `theta` (fixture names) with the file.
void expect_hvp_matches(const std::map<std::string, Tensor>& file,
                        const std::vector<std::pair<std::string, Tensor>>& theta,
                        const std::function<Tensor()>& loss_fn) {
  std::vector<Tensor> xs, us;
  for (const auto& [name, t] : theta) {
    xs.push_back(t);
    us.push_back(file.at("u." + name));
  }
  const Tensor loss = loss_fn();
  expect_close(loss, file.at("loss"), "loss");
  const std::vector<Tensor> grads = grad({loss}, xs, {}, {.create_graph = true});
  std::vector<Tensor> live, live_u;
  for (size_t i = 0; i < xs.size(); ++i) {
    expect_close(grads[i], file.at("grad." + theta[i].first), "grad." + theta[i].first);
    if (grads[i].requires_grad()) {
      live.push_back(grads[i]);
      live_u.push_back(us[i]);
    }
  }
  ASSERT_FALSE(live.empty());
  const std::vector<Tensor> hvp = grad(live, xs, live_u, {.allow_unused = true});
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor h = hvp[i].defined() ? hvp[i] : Tensor::zeros(xs[i].shape(), DType::Float64);
    expect_close(h, file.at("hvp." + theta[i].first), "hvp." + theta[i].first);
  }
}

// Loads the fixture's MHA parameters into an attograd module (the same names).
void load_mha(nn::MultiheadAttention& mha, const std::map<std::string, Tensor>& file,
              std::vector<std::pair<std::string, Tensor>>& theta) {
  NoGradGuard no_grad;
  for (auto [name, p] : mha.named_parameters()) {
    p.copy_(file.at("param." + name));
    theta.push_back({name, p});
  }
}
}  // namespace

TEST(SecondOrderParity, MhaFloatMaskAndPaddingHessianVectorProductMatchesTorch) {
  const auto file = load_safetensors(kDir + "mha_float_mask_padding.safetensors");
  nn::MultiheadAttention mha(8, 2, 0.0, true, /*batch_first=*/false, DType::Float64);
  std::vector<std::pair<std::string, Tensor>> theta;
  load_mha(mha, file, theta);
  Tensor q = file.at("param.query").clone().requires_grad_(), k = file.at("param.key").clone().requires_grad_(),
         v = file.at("param.value").clone().requires_grad_(),
         mask = file.at("param.attn_mask").clone().requires_grad_();
  theta.insert(theta.end(), {{"query", q}, {"key", k}, {"value", v}, {"attn_mask", mask}});
  expect_hvp_matches(file, theta, [&] {
    const auto o = mha.forward(q, k, v, file.at("key_padding_mask"), true, mask, /*average=*/true);
    return add(sum(mul(o.output, file.at("w_out"))), sum(mul(o.weights, file.at("w_attn"))));
  });
}

TEST(SecondOrderParity, MhaCausalSelfAttentionPerHeadHessianVectorProductMatchesTorch) {
  const auto file = load_safetensors(kDir + "mha_causal_per_head.safetensors");
  nn::MultiheadAttention mha(8, 2, 0.0, true, /*batch_first=*/false, DType::Float64);
  std::vector<std::pair<std::string, Tensor>> theta;
  load_mha(mha, file, theta);
  Tensor x = file.at("param.query").clone().requires_grad_();
  theta.push_back({"query", x});
  expect_hvp_matches(file, theta, [&] {
    const auto o = mha.forward(x, x, x, Tensor(), true, Tensor(), /*average=*/false, /*is_causal=*/true);
    return add(sum(mul(o.output, file.at("w_out"))), sum(mul(o.weights, file.at("w_attn"))));
  });
}

TEST(SecondOrderParity, TinyLmLossHessianVectorProductMatchesTorch) {
  const auto file = load_safetensors(kDir + "lm_tiny.safetensors");
  models::TransformerLM lm({.vocab_size = 7, .n_layer = 1, .n_head = 2, .n_embd = 8, .block_size = 6, .dropout = 0.0},
                           DType::Float64);
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : file)
    if (name.starts_with("param.")) state[name.substr(6)] = t;
  lm.load_state_dict(state, /*strict=*/true);
  std::vector<std::pair<std::string, Tensor>> theta = lm.named_parameters();
  expect_hvp_matches(file, theta, [&] { return lm.loss(file.at("ids"), file.at("targets")); });
}

// ---- the example of docs/higher_order.md ------------------------------------------------------

TEST(HigherOrderDoc, HessianVectorProductExampleMatchesTheNumbersFromPyTorch) {
  // The code of the doc, as it is written there:
  const Tensor A = Tensor::matrix({{1.0, -2.0, 0.5}, {0.3, 0.8, -1.0}}, DType::Float64);
  Tensor x = Tensor::from_vector(std::vector<double>{0.5, -1.0, 2.0}, {3}, DType::Float64).requires_grad_();
  const Tensor v = Tensor::from_vector(std::vector<double>{1.0, 0.5, -2.0}, {3}, DType::Float64);

  Tensor y = logsumexp(matmul(A, x), {0}) + sum(silu(x));    // f(x), 0-d
  Tensor g = grad({y}, {x}, {}, {.create_graph = true})[0];  // ∇f(x), recorded
  Tensor hv = grad({sum(g * v)}, {x})[0];                    // H·v = ∇(∇f · v)

  for (double h : hv.to_double_vector()) std::printf("%.17g\n", h);
  // What torch.autograd.grad prints for the same function (docs/higher_order.md):
  const std::vector<double> torch_g = {1.738470929501477, -1.9217094806667874, 1.5875908392109492};
  const std::vector<double> torch_hv = {0.43572681198805524, 0.17319191936090125, -0.11191479808007138};
  EXPECT_NEAR(y.item(), 5.306013609316354, 1e-14);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(g.to_double_vector()[i], torch_g[i], 1e-14) << i;
    EXPECT_NEAR(hv.to_double_vector()[i], torch_hv[i], 1e-14) << i;
  }
  // The doc's second form, through the function transforms:
  auto f = [&](const Tensor& x) { return logsumexp(matmul(A, x), {0}) + sum(silu(x)); };
  auto [y2, hv2] = ag::autograd::functional::hvp(f, x, v);  // (f(x), H·v)
  EXPECT_NEAR(y2.item(), 5.306013609316354, 1e-14);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(hv2.to_double_vector()[i], torch_hv[i], 1e-14) << i;
}
