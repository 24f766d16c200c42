// TransformerLM: names, init, tied head, gradcheck, KV cache, overfitting one batch.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "optim/adam.h"

using namespace ag;
using namespace ag::models;

TEST(Model, ParameterNamesMatchThePyTorchTwin) {
  GPTConfig cfg{11, 2, 2, 8, 6, 0.0};
  TransformerLM m(cfg);
  std::vector<std::string> names;
  for (auto& [n, _] : m.named_parameters()) names.push_back(n);
  std::vector<std::string> want = {"tok_emb.weight", "pos_emb.weight"};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* s : {"ln1.weight", "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
                          "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
                          "mlp.proj.weight", "mlp.proj.bias"})
      want.push_back(b + s);
  }
  want.insert(want.end(), {"ln_f.weight", "ln_f.bias"});
  EXPECT_EQ(names, want);
}

TEST(Model, NanoGPTInitialisation) {
  GPTConfig cfg{65, 4, 4, 128, 64, 0.0};
  Generator g(1337);
  TransformerLM m(cfg, DType::Float32, g);
  auto stdev = [](const Tensor& t) {
    double s = 0, s2 = 0;
    const auto v = t.to_double_vector();
    for (double x : v) s += x, s2 += x * x;
    const double n = static_cast<double>(v.size());
    return std::sqrt(s2 / n - (s / n) * (s / n));
  };
  const double resid = 0.02 / std::sqrt(8.0);
  for (auto& [n, p] : m.named_parameters()) {
    SCOPED_TRACE(n);
    if (n.find("ln") != std::string::npos) {
      for (double v : p.to_double_vector()) EXPECT_EQ(v, n.ends_with("weight") ? 1.0 : 0.0);
    } else if (p.dim() == 1) {
      for (double v : p.to_double_vector()) EXPECT_EQ(v, 0.0);
    } else if (n.ends_with("out_proj.weight") || n.ends_with("mlp.proj.weight")) {
      EXPECT_NEAR(stdev(p), resid, 0.1 * resid);
    } else {
      EXPECT_NEAR(stdev(p), 0.02, 0.002);
    }
  }
}

TEST(Model, HeadIsTiedToTheTokenEmbedding) {
  GPTConfig cfg{7, 1, 1, 4, 5, 0.0};
  TransformerLM m(cfg);
  EXPECT_EQ(m.named_parameters().size(), 2u + 12u + 2u);  // no separate head weight
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3});
  const Tensor before = m.forward(idx);
  Tensor(m.tok_emb->weight).data<float>()[6 * 4 + 0] += 1.0f;  // row 6 is never an input
  const Tensor after = m.forward(idx);
  EXPECT_NE(before.at({0, 2, 6}), after.at({0, 2, 6}));  // but it is an output row
  EXPECT_EQ(before.at({0, 2, 5}), after.at({0, 2, 5}));
}

TEST(Model, TinyTransformerPassesGradcheckInFloat64) {
  GPTConfig cfg{5, 1, 2, 4, 4, 0.0};
  Generator g(3);
  TransformerLM m(cfg, DType::Float64, g);
  // Larger weights than the 0.02 init, so that every path carries a visible gradient.
  for (auto& [n, p] : m.named_parameters())
    if (n.find("ln") == std::string::npos) {
      Tensor t = p;
      for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = g.uniform(-0.5, 0.5);
    }
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{0, 3, 3, 1, 4, 2, 2, 0}, {2, 4});
  Tensor tgt = Tensor::from_vector(std::vector<int64_t>{3, 3, 1, 4, 2, 2, 0, 1}, {2, 4});
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters()) params.push_back(p), names.push_back(n);
  const GradcheckReport r = gradcheck([&](const std::vector<Tensor>&) { return m.loss(idx, tgt); }, params, {}, names);
  EXPECT_TRUE(r.passed()) << r.table();
  const GradcheckReport r2 = gradcheck([&](const std::vector<Tensor>&) { return m.forward(idx); },
                                       {m.blocks->operator[](0).attn->in_proj_weight, m.tok_emb->weight}, {},
                                       {"in_proj_weight", "tok_emb.weight"});
  EXPECT_TRUE(r2.passed()) << r2.table();
}

TEST(Model, GreedyKVCacheSamplingEqualsFullRecomputation) {
  GPTConfig cfg{13, 2, 2, 16, 8, 0.0};
  Generator g(4);
  TransformerLM m(cfg, DType::Float32, g);
  for (auto& [n, p] : m.named_parameters())  // sharper logits than the init gives, so ties cannot hide
    if (p.dim() == 2) {
      Tensor t = p;
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(g.normal() * 0.5);
    }
  m.eval();
  Generator a(1), b(1);
  // 30 new tokens with block 8: the window restarts several times.
  const auto with = m.generate({1, 5, 7}, {30, 0.0, 0, true}, a);
  const auto without = m.generate({1, 5, 7}, {30, 0.0, 0, false}, b);
  EXPECT_EQ(with, without);
  std::set<int64_t> distinct(with.begin(), with.end());
  EXPECT_GT(distinct.size(), 2u);  // not a degenerate constant sequence
  // Sampling with temperature is also identical given the same generator state.
  Generator c(9), d(9);
  EXPECT_EQ(m.generate({2}, {20, 1.0, 5, true}, c), m.generate({2}, {20, 1.0, 5, false}, d));
}

TEST(Model, OverfitsOneBatch) {
  GPTConfig cfg{10, 1, 2, 32, 8, 0.0};
  Generator g(5);
  TransformerLM m(cfg, DType::Float32, g);
  Tensor x = Tensor::randint(0, 10, {4, 8}, g), y = Tensor::randint(0, 10, {4, 8}, g);
  optim::AdamW opt(m.parameters(), {.lr = 1e-2, .betas = {0.9, 0.99}, .eps = 1e-8, .weight_decay = 0.0});
  double loss = 0;
  int steps = 0;
  for (; steps < 300; ++steps) {
    Tensor l = m.loss(x, y);
    loss = l.item();
    if (loss < 0.1) break;
    opt.zero_grad();
    l.backward();
    opt.step();
  }
  EXPECT_LT(loss, 0.1) << "after " << steps << " steps";
}

TEST(Model, BadInput) {
  EXPECT_THROW(TransformerLM(GPTConfig{10, 1, 3, 8, 4, 0.0}), std::invalid_argument);
  TransformerLM m(GPTConfig{10, 1, 2, 8, 4, 0.0});
  EXPECT_THROW(m.forward(Tensor::zeros({1, 5}, DType::Int64)), std::invalid_argument);  // longer than block
  EXPECT_THROW(m.forward(Tensor::from_vector(std::vector<int64_t>{10}, {1, 1})), std::out_of_range);
  Generator g(1);
  EXPECT_THROW(m.generate({}, {}, g), std::invalid_argument);
  EXPECT_THROW(m.generate({11}, {}, g), std::invalid_argument);
}
