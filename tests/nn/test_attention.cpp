// MultiheadAttention: the seed example, gradcheck under every mask combination, fully masked
// rows, the KV cache, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/attention.h"
#include "nn/init.h"

using namespace ag;
using namespace ag::nn;

TEST(AttentionSeed, SoftmaxAndContextOfTheSeedExample) {
  // Q = [[1,0],[0,1]], K = [[1,0],[1,1],[0,1]], V = [[10,0],[0,5],[0,1]], d = 2
  const Tensor Q = unsqueeze(Tensor::matrix({{1, 0}, {0, 1}}, DType::Float64), 0);
  const Tensor K = unsqueeze(Tensor::matrix({{1, 0}, {1, 1}, {0, 1}}, DType::Float64), 0);
  const Tensor V = unsqueeze(Tensor::matrix({{10, 0}, {0, 5}, {0, 1}}, DType::Float64), 0);
  const Tensor P = attention_probs(Q, K, Tensor(), 1 / std::sqrt(2.0), false);  // (1, 2, 3)
  const Tensor C = matmul(P, V);                                                // (1, 2, 2)
  const double p[2][3] = {{0.401, 0.401, 0.198}, {0.198, 0.401, 0.401}};
  const double c[2][2] = {{4.011, 2.203}, {1.978, 2.407}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(P.at({0, i, j}), p[i][j], 5e-4);
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(C.at({0, i, j}), c[i][j], 5e-4);
  }
  // The same through MultiheadAttention with identity projections and one head.
  MultiheadAttention mha(2, 1, 0.0, true, false, DType::Float64);
  Tensor eye = Tensor::matrix({{1, 0}, {0, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}}, DType::Float64);
  mha.load_state_dict({{"in_proj_weight", eye}, {"in_proj_bias", Tensor::zeros({6}, DType::Float64)},
                       {"out_proj.weight", Tensor::matrix({{1, 0}, {0, 1}}, DType::Float64)},
                       {"out_proj.bias", Tensor::zeros({2}, DType::Float64)}});
  auto out = mha.forward(squeeze(Q, 0), squeeze(K, 0), squeeze(V, 0));  // unbatched (L, E)
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(out.weights.at({i, j}), p[i][j], 5e-4);
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(out.output.at({i, j}), c[i][j], 5e-4);
  }
}

namespace {
enum class MaskKind { None, Causal, Padding, Both, Float2d, Bool3d };
const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::None: return "none";
    case MaskKind::Causal: return "causal";
    case MaskKind::Padding: return "padding";
    case MaskKind::Both: return "causal+padding";
    case MaskKind::Float2d: return "float2d";
    case MaskKind::Bool3d: return "bool3d";
  }
  return "?";
}

// Gradchecks MHA (float64) against query, key, value and all four parameters.
void gradcheck_mha(MaskKind mk, bool batch_first, bool self_attention, bool per_head, int64_t L, int64_t S) {
  const int64_t E = 6, H = 2, N = 2;
  Generator g(77);
  MultiheadAttention mha(E, H, 0.0, true, batch_first, DType::Float64, g);
  for (auto& [n, p] : mha.named_parameters()) init::uniform_(p, -0.5, 0.5, g);  // nonzero biases too
  auto shaped = [&](int64_t T) {
    return batch_first ? Tensor::randn({N, T, E}, DType::Float64, g) : Tensor::randn({T, N, E}, DType::Float64, g);
  };
  Tensor q = shaped(L).requires_grad_();
  Tensor k = self_attention ? q : shaped(S).requires_grad_();
  Tensor v = self_attention ? q : shaped(S).requires_grad_();
  Tensor kpm, am;
  const bool causal = mk == MaskKind::Causal || mk == MaskKind::Both;
  if (mk == MaskKind::Padding || mk == MaskKind::Both)  // batch 1 ignores its last key
    kpm = Tensor::from_vector(std::vector<bool>{false, false, false, false, false, false, false, true}, {N, 4})
              .detach();
  if (mk == MaskKind::Float2d) am = Tensor::randn({L, S}, DType::Float64, g);
  if (mk == MaskKind::Bool3d) {
    std::vector<bool> m(N * H * L * S, false);
    for (size_t i = 0; i < m.size(); ++i) m[i] = (i % 3 == 1) && (i % S != 0);  // key 0 stays visible
    am = Tensor::from_vector(m, {N * H, L, S});
  }
  std::vector<Tensor> inputs = {q};
  std::vector<std::string> names = {"query"};
  if (!self_attention) {
    inputs.insert(inputs.end(), {k, v});
    names.insert(names.end(), {"key", "value"});
  }
  for (auto& [n, p] : mha.named_parameters()) {
    inputs.push_back(p);
    names.push_back(n);
  }
  auto f = [&](const std::vector<Tensor>&) {
    auto o = mha.forward(q, k, v, kpm, true, am, !per_head, causal);
    return concat({reshape(o.output, {-1}), reshape(o.weights, {-1})}, 0);  // check both outputs
  };
  const GradcheckReport r = gradcheck(f, inputs, {}, names);
  EXPECT_TRUE(r.passed()) << "mask " << mask_name(mk) << " batch_first " << batch_first << "\n" << r.table();
}
}  // namespace

TEST(AttentionGradcheck, EveryMaskCombination) {
  for (MaskKind mk : {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::Both, MaskKind::Float2d,
                      MaskKind::Bool3d})
    gradcheck_mha(mk, false, false, false, 4, 4);
}

TEST(AttentionGradcheck, SelfAttentionFastPathBatchFirstPerHead) {
  gradcheck_mha(MaskKind::Causal, true, true, true, 4, 4);
  gradcheck_mha(MaskKind::Padding, true, true, false, 4, 4);
}

TEST(AttentionGradcheck, CrossAttentionWithLNotEqualS) {
  gradcheck_mha(MaskKind::Padding, true, false, true, 3, 4);
  gradcheck_mha(MaskKind::Float2d, false, false, false, 2, 4);
}

TEST(AttentionMasks, FullyMaskedRowGivesZerosBiasOutputAndFiniteGradients) {
  const int64_t E = 4, H = 2, L = 3, S = 3, N = 1;
  Generator g(5);
  MultiheadAttention mha(E, H, 0.0, true, true, DType::Float64, g);
  init::uniform_(mha.out_proj->bias, -1, 1, g);
  init::uniform_(mha.in_proj_bias, -1, 1, g);
  Tensor x = Tensor::randn({N, L, E}, DType::Float64, g).requires_grad_();
  // Query row 1 may attend to nothing.
  Tensor am = Tensor::from_vector(std::vector<bool>{false, true, true, true, true, true, false, false, false}, {L, S});
  auto o = mha.forward(x, x, x, Tensor(), true, am, false);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t j = 0; j < S; ++j) EXPECT_EQ(o.weights.at({0, h, 1, j}), 0.0);
  for (int64_t e = 0; e < E; ++e) EXPECT_NEAR(o.output.at({0, 1, e}), mha.out_proj->bias.at({e}), 1e-12);
  sum(o.output).backward();
  for (const Tensor& t : {x.grad(), mha.in_proj_weight.grad(), mha.out_proj->weight.grad()})
    for (double v : t.to_double_vector()) EXPECT_TRUE(std::isfinite(v));
  // Padding every key of a batch entry does the same for all its queries.
  Tensor kpm = Tensor::from_vector(std::vector<bool>{true, true, true}, {1, 3});
  auto o2 = mha.forward(x, x, x, kpm);
  for (double v : o2.weights.to_double_vector()) EXPECT_EQ(v, 0.0);
}

TEST(AttentionMasks, BoolMaskEqualsMinusInfinityFloatMaskAndIsCausalEqualsExplicitMask) {
  Generator g(9);
  MultiheadAttention mha(8, 4, 0.0, true, false, DType::Float64, g);
  Tensor q = Tensor::randn({5, 2, 8}, DType::Float64, g), k = Tensor::randn({5, 2, 8}, DType::Float64, g);
  std::vector<bool> causal(25);
  std::vector<double> fm(25);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) {
      causal[i * 5 + j] = j > i;
      fm[i * 5 + j] = j > i ? -INFINITY : 0.0;
    }
  auto a = mha.forward(q, k, k, Tensor(), true, Tensor::from_vector(causal, {5, 5}));
  auto b = mha.forward(q, k, k, Tensor(), true, Tensor::from_vector(fm, {5, 5}, DType::Float64));
  auto c = mha.forward(q, k, k, Tensor(), true, Tensor(), true, /*is_causal=*/true);
  // Bit for bit: with need_weights all three compute the scores with the same GEMM, of the same
  // shape, and only then set the hidden entries to -inf, so the kernel cannot round them apart.
  EXPECT_EQ(a.output.to_double_vector(), b.output.to_double_vector());
  EXPECT_EQ(a.output.to_double_vector(), c.output.to_double_vector());
  EXPECT_EQ(a.weights.to_double_vector(), c.weights.to_double_vector());
  EXPECT_EQ(a.weights.at({1, 0, 3}), 0.0);  // (N, L, S): query 0 never sees key 3
}

TEST(AttentionDropout, OnlyInTraining) {
  Generator g(3);
  MultiheadAttention mha(4, 2, 0.5, true, true, DType::Float64, g);
  Tensor x = Tensor::randn({1, 6, 4}, DType::Float64, g);
  auto t1 = mha.forward(x, x, x, Tensor(), true, Tensor(), false);
  int zeros = 0;
  for (double v : t1.weights.to_double_vector()) zeros += v == 0.0;
  EXPECT_GT(zeros, 10);  // about half of 2·36 weights dropped
  mha.eval();
  auto e1 = mha.forward(x, x, x), e2 = mha.forward(x, x, x);
  EXPECT_EQ(e1.output.to_double_vector(), e2.output.to_double_vector());  // one call twice: same bits
  for (double v : e1.weights.to_double_vector()) EXPECT_GT(v, 0.0);
}

TEST(AttentionKVCache, IncrementalDecodingMatchesFullCausalForward) {
  Generator g(21);
  MultiheadAttention mha(8, 2, 0.0, true, true, DType::Float64, g);
  Tensor x = Tensor::randn({2, 7, 8}, DType::Float64, g);
  NoGradGuard no_grad;
  const Tensor full = mha.forward(x, x, x, Tensor(), false, Tensor(), true, true).output;  // (2, 7, 8)
  KVCache cache;
  std::vector<Tensor> steps = {mha.forward_cached(narrow(x, 1, 0, 3), cache, 16)};  // prefill 3
  for (int64_t t = 3; t < 7; ++t) steps.push_back(mha.forward_cached(narrow(x, 1, t, 1), cache, 16));
  const Tensor inc = concat(steps, 1);
  const auto a = full.to_double_vector(), b = inc.to_double_vector();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  EXPECT_EQ(cache.len, 7);
  EXPECT_THROW(mha.forward_cached(Tensor::zeros({2, 10, 8}, DType::Float64), cache, 16), std::invalid_argument);
}

TEST(AttentionBadInput, ErrorsNameExpectedAndGivenShapes) {
  EXPECT_THROW(MultiheadAttention(10, 3), std::invalid_argument);
  MultiheadAttention mha(8, 2);
  Tensor q = Tensor::zeros({5, 2, 8}), k = Tensor::zeros({4, 2, 8});
  auto message = [&](auto fn) {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  std::string m = message([&] { mha.forward(q, k, k, Tensor(), true, Tensor::zeros({5, 5}, DType::Bool)); });
  EXPECT_NE(m.find("(L, S) = [5, 4]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4, 5, 4]"), std::string::npos) << m;
  EXPECT_NE(m.find("bool[5, 5]"), std::string::npos) << m;
  m = message([&] { mha.forward(q, k, k, Tensor::zeros({2, 5}, DType::Bool)); });
  EXPECT_NE(m.find("key_padding_mask must have shape (N, S) = [2, 4]"), std::string::npos) << m;
  m = message([&] { mha.forward(q, k, k, Tensor(), true, Tensor::zeros({5, 4}, DType::Int64)); });
  EXPECT_NE(m.find("attn_mask must be bool or float32"), std::string::npos) << m;
  m = message([&] { mha.forward(q.to(DType::Float64), k, k); });
  EXPECT_NE(m.find("dtype"), std::string::npos) << m;
  m = message([&] { mha.forward(Tensor::zeros({5, 2, 6}), k, k); });
  EXPECT_NE(m.find("E = 8"), std::string::npos) << m;
  m = message([&] { mha.forward(q, Tensor::zeros({4, 3, 8}), Tensor::zeros({4, 3, 8})); });
  EXPECT_NE(m.find("N = 2"), std::string::npos) << m;
  m = message([&] { mha.forward(q, k, Tensor::zeros({3, 2, 8})); });
  EXPECT_NE(m.find("value"), std::string::npos) << m;
  m = message([&] { mha.forward(Tensor(), k, k); });
  EXPECT_NE(m.find("query, key and value are required"), std::string::npos) << m;
}
