// The transformers' inference decoder (models/decode.h): its kernels against plain double loops,
// and its logits, at batch 1 and 8, against TransformerLM::forward over the whole window, for
// the GPT and the modern architecture (RoPE and QK-norm on the cached keys, RMSNorm, relu²,
// the untied head and the soft-cap), also with its value embeddings and U-net skips on.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "models/decode.h"
#include "models/transformer_lm.h"

using namespace ag;
using namespace ag::models;

namespace {

std::vector<float> random_floats(int64_t n, Generator& g, double scale = 1.0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(g.normal() * scale);
  return v;
}

// A model whose projections span more than one of the decoder's kBlock-wide (64) blocks and end
// in a partial one (E = 96, 3E = 288; 4E = 384 is whole blocks, the 23-wide head one partial
// block), with weights sharper than the init so that logits differ clearly.
std::unique_ptr<TransformerLM> sharp_model(Generator& g, const GPTConfig& shape) {
  static_assert(decode::kBlock == 64, "pick sizes that cover whole and partial blocks");
  GPTConfig c = shape;
  c.vocab_size = 23, c.n_head = 4, c.n_embd = 96, c.block_size = 16;
  auto m = std::make_unique<TransformerLM>(c, DType::Float32, g);
  for (auto& [n, p] : m->named_parameters()) {
    float* d = p.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) d[i] = static_cast<float>(g.normal() * (p.dim() == 2 ? 0.3 : 0.1));
  }
  m->eval();
  return m;
}

void expect_close(const float* got, const std::vector<double>& want, double tol, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// Both architectures; the modern one with a soft-cap that bends the logits (they reach ±5), and
// with modded-nanogpt's parts: 3 layers, a value table in layers 0 and 2, block 2's input
// getting block 0's output by a U-net skip (the middle block neither), the x0 residual.
enum class Variant { Gpt, Modern, ModernWithParts };
class DecodeArch : public ::testing::TestWithParam<Variant> {
 protected:
  // The variant's layers, architecture and parts; the other sizes as given.
  GPTConfig config(GPTConfig c = {}) const {
    c.n_layer = 2;
    if (GetParam() != Variant::Gpt) c.arch = Architecture::modern(3.0);
    if (GetParam() == Variant::ModernWithParts) c.n_layer = 3, c.value_embeds = 1, c.unet_skips = true, c.x0_residual = true;
    return c;
  }
};
INSTANTIATE_TEST_SUITE_P(Transformers, DecodeArch, ::testing::Values(Variant::Gpt, Variant::Modern, Variant::ModernWithParts),
                         [](const auto& info) {
                           return info.param == Variant::Gpt ? "gpt" : info.param == Variant::Modern ? "modern" : "modern_parts";
                         });

}  // namespace

TEST(Decode, AttendRowMatchesTheReference) {
  Generator g(3);
  for (int64_t S : {1, 2, 7, 64, 100}) {
    const int64_t hd = 16;
    const auto q = random_floats(hd, g), K = random_floats(S * hd, g), V = random_floats(S * hd, g);
    std::vector<float> scores(static_cast<size_t>(S)), fast(hd), ref(hd);
    decode::attend_row(q.data(), K.data(), V.data(), S, hd, 0.25f, scores.data(), fast.data());
    decode::attend_row_reference(q.data(), K.data(), V.data(), S, hd, 0.25f, ref.data());
    for (int64_t j = 0; j < hd; ++j) EXPECT_NEAR(fast[j], ref[j], 1e-5 * (1 + std::abs(ref[j]))) << "S " << S;
  }
}

TEST(Decode, LinearMatchesPlainLoops) {
  Generator g(4);
  const int64_t K = 48, N = 150;  // N: full blocks and a partial one
  for (int64_t R : {1, 3, 20}) {  // one row, a few (the blocked copy), many (W as stored)
    for (int mode = 0; mode < 4; ++mode) {  // plain, GELU, relu², accumulate into y
      const bool gelu = mode == 1, relu2 = mode == 2, acc = mode == 3;
      const decode::Activation act = gelu ? decode::Activation::Gelu : relu2 ? decode::Activation::ReluSquared
                                                                           : decode::Activation::None;
      const auto x = random_floats(R * K, g), W = random_floats(N * K, g, 0.2), b = random_floats(N, g);
      std::vector<float> y = random_floats(R * N, g);
      std::vector<double> want(static_cast<size_t>(R * N));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double s = b[n];
          for (int64_t k = 0; k < K; ++k) s += static_cast<double>(x[r * K + k]) * W[n * K + k];
          if (gelu) s = s * 0.5 * std::erfc(-s / std::sqrt(2.0));
          if (relu2) s = s > 0 ? s * s : 0.0;
          want[r * N + n] = (acc ? y[r * N + n] : 0.0) + s;
        }
      decode::linear(x.data(), R, decode::Weight(W.data(), b.data(), N, K), y.data(), act, acc);
      expect_close(y.data(), want, 1e-5, "R " + std::to_string(R) + " mode " + std::to_string(mode));
    }
  }
  std::vector<float> x(4), y(4);
  EXPECT_THROW(decode::linear(x.data(), 1, decode::Weight(x.data(), nullptr, 2, 2), y.data(), decode::Activation::Gelu, true),
               std::invalid_argument);
}

// Prefill a prompt, then one token at a time: each step's logits equal forward() over the whole
// sequence so far, at its last position, for every row of the batch.
TEST_P(DecodeArch, LogitsEqualTheUncachedForwardAtBatch1And8) {
  Generator g(5);
  const auto model = sharp_model(g, config());
  const TransformerLM& m = *model;
  NoGradGuard no_grad;
  const int64_t V = 23, prompt = 5, steps = 11;  // 5 + 11 = the whole block of 16
  for (int64_t B : {1, 8}) {
    Decoder dec(m, B);
    std::vector<std::vector<int64_t>> seqs(static_cast<size_t>(B));
    std::vector<int64_t> feed;
    for (auto& s : seqs)
      for (int64_t t = 0; t < prompt; ++t) s.push_back(static_cast<int64_t>(g.uniform() * V) % V);
    for (const auto& s : seqs) feed.insert(feed.end(), s.begin(), s.end());
    int64_t T = prompt;
    for (int64_t step = 0; step <= steps; ++step) {
      const float* got = dec.forward(feed.data(), T);  // (B, V)
      std::vector<int64_t> all;
      for (const auto& s : seqs) all.insert(all.end(), s.begin(), s.end());
      const int64_t L = static_cast<int64_t>(seqs[0].size());
      const Tensor logits = m.forward(Tensor::from_vector(all, {B, L}));  // (B, L, V)
      expect_close(got, narrow(logits, 1, L - 1, 1).to_double_vector(), 2e-4,
                   "batch " + std::to_string(B) + " step " + std::to_string(step));
      if (L == 16) break;
      feed.clear();  // the next token of each row: any id, the logits are compared whatever it is
      for (auto& s : seqs) feed.push_back(s.emplace_back(static_cast<int64_t>(g.uniform() * V) % V));
      T = 1;
    }
    EXPECT_EQ(dec.len(), 16);
    EXPECT_THROW(dec.forward(feed.data(), 1), std::invalid_argument);  // past block_size
    dec.reset();
    std::vector<int64_t> bad(static_cast<size_t>(B), V);
    EXPECT_THROW(dec.forward(bad.data(), 1), std::invalid_argument);  // id outside the vocabulary
  }
}

// A batch of 8 different prompts decodes to what each prompt gives alone, with and without the
// cache, through window restarts (block 16, 40 new tokens).
TEST_P(DecodeArch, GreedyBatch8EqualsEachRowAlone) {
  Generator g(6);
  const auto model = sharp_model(g, config());
  const TransformerLM& m = *model;
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t b = 0; b < 8; ++b) prompts.push_back({b, (3 * b + 1) % 23, (5 * b + 2) % 23});
  Generator a(1);
  const auto batch = m.generate_batch(prompts, {40, 0.0, 0, true}, a);
  ASSERT_EQ(batch.size(), 8u);
  for (size_t b = 0; b < 8; ++b) {
    Generator c(1), d(1);
    EXPECT_EQ(batch[b], m.generate(prompts[b], {40, 0.0, 0, true}, c)) << "row " << b;
    EXPECT_EQ(batch[b], m.generate(prompts[b], {40, 0.0, 0, false}, d)) << "row " << b << " without the cache";
  }
  Generator e(1);
  EXPECT_THROW(m.generate_batch({{1, 2}, {3}}, {4, 0.0, 0, true}, e), std::invalid_argument);  // lengths differ
  EXPECT_THROW(m.generate_batch({}, {4, 0.0, 0, true}, e), std::invalid_argument);
}

// The float64 model keeps the autograd cached path; it too equals full recomputation.
TEST_P(DecodeArch, Float64ModelsDecodeThroughTheOps) {
  Generator g(7);
  TransformerLM m(config(GPTConfig{13, 2, 2, 16, 8}), DType::Float64, g);
  for (auto& [n, p] : m.named_parameters()) {  // the modern init's zero projections would hide the cache
    double* d = p.data<double>();
    for (int64_t i = 0; i < p.numel(); ++i) d[i] = g.normal() * 0.3;
  }
  EXPECT_FALSE(Decoder::supports(m));
  EXPECT_THROW(Decoder(m, 1), std::invalid_argument);
  m.eval();
  Generator a(2), b(2);
  EXPECT_EQ(m.generate({1, 2}, {20, 1.0, 0, true}, a), m.generate({1, 2}, {20, 1.0, 0, false}, b));
}
