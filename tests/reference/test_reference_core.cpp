// The reference core (reference/) on its own: its line budget, and every op's backward against
// central finite differences of its own forward. Nothing of the fast library is used here, so
// the reference the agreement tests (test_reference_agreement.cpp) hold the library to is
// checked independently of it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "reference/gpt.h"

namespace {

using namespace ag::ref;

// ---- the line budget -----------------------------------------------------------------------

int64_t lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(ReferenceCore, StaysWithinItsLineBudget) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(ATTOGRAD_SOURCE_DIR) / "reference";
  int64_t total = 0, core = 0;
  std::string files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const int64_t n = lines_of(e.path());
    total += n;
    files += " " + e.path().filename().string() + " " + std::to_string(n);
    // The tensor type, the walk and matmul: the part a learner reads first.
    if (e.path().stem() == "tensor") core += n;
  }
  EXPECT_LE(total, 1500) << "reference/ is " << total << " lines, comments included (budget 1500):" << files;
  EXPECT_GT(core, 0) << "reference/tensor.h and tensor.cpp not found";
  EXPECT_LE(core, 400) << "reference/tensor.h and tensor.cpp (the tensor, the walk and matmul) are " << core
                       << " lines (budget 400)";
}

// ---- gradients against finite differences ----------------------------------------------------

Tensor random(Shape shape, std::mt19937_64& rng, bool requires_grad = true, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v) x = u(rng);
  return tensor(std::move(shape), std::move(v), requires_grad);
}

// Checks backward() of f at `inputs` (those requiring grad) against central differences of
// Σ f(inputs) ⊙ seed, seed random, with gradcheck's tolerance |a − n| ≤ 1e-5 + 1e-3·|n|.
void expect_gradients(const std::function<Tensor()>& f, const std::vector<Tensor>& inputs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Tensor out = f();
  const Tensor g = random(out->shape, rng, false);
  for (const Tensor& in : inputs) in->grad.clear();
  backward(out, g);
  auto loss = [&] {
    const Tensor o = f();
    double l = 0;
    for (size_t i = 0; i < o->data.size(); ++i)
      if (g->data[i] != 0) l += o->data[i] * g->data[i];
    return l;
  };
  const double eps = 1e-6;
  for (size_t n = 0; n < inputs.size(); ++n) {
    const Tensor& x = inputs[n];
    ASSERT_EQ(x->grad.size(), x->data.size()) << "input " << n << " got no gradient";
    for (size_t i = 0; i < x->data.size(); ++i) {
      const double keep = x->data[i];
      x->data[i] = keep + eps;
      const double up = loss();
      x->data[i] = keep - eps;
      const double down = loss();
      x->data[i] = keep;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(x->grad[i], numeric, 1e-5 + 1e-3 * std::fabs(numeric)) << "input " << n << ", element " << i;
    }
  }
}

TEST(ReferenceCore, MatmulBatchedAndSharedGradients) {
  std::mt19937_64 rng(1);
  const Tensor a = random({2, 3, 4}, rng), b = random({2, 4, 5}, rng), w = random({4, 5}, rng);
  expect_gradients([&] { return matmul(a, b); }, {a, b}, 2);
  expect_gradients([&] { return matmul(a, w); }, {a, w}, 3);  // w's gradient summed over the batch by the walk
  const Tensor m = random({3, 4}, rng);
  expect_gradients([&] { return matmul(m, w); }, {m, w}, 4);
}

TEST(ReferenceCore, AddBroadcastsAndTheWalkSumsBack) {
  std::mt19937_64 rng(5);
  const Tensor a = random({2, 3, 4}, rng), row = random({4}, rng), col = random({3, 1}, rng), one = random({1}, rng);
  expect_gradients([&] { return add(a, row); }, {a, row}, 6);
  expect_gradients([&] { return add(col, row); }, {col, row}, 7);  // (3, 1) + (4) -> (3, 4)
  expect_gradients([&] { return add(a, one); }, {a, one}, 8);
  // A tensor used twice gets the sum of both uses' gradients.
  expect_gradients([&] { return add(a, scale(a, 3)); }, {a}, 9);
}

TEST(ReferenceCore, ShapeOpsAndLinear) {
  std::mt19937_64 rng(10);
  const Tensor a = random({2, 3, 4}, rng), w = random({5, 4}, rng), b = random({5}, rng);
  expect_gradients([&] { return transpose(a, 0, 2); }, {a}, 11);
  expect_gradients([&] { return transpose(a, -2, -1); }, {a}, 12);
  expect_gradients([&] { return reshape(a, {4, 6}); }, {a}, 13);
  expect_gradients([&] { return narrow(a, 1, 2); }, {a}, 14);
  expect_gradients([&] { return linear(a, w, b); }, {a, w, b}, 15);
}

TEST(ReferenceCore, GeluSoftmaxLayerNorm) {
  std::mt19937_64 rng(20);
  const Tensor a = random({3, 5}, rng, true, -3, 3), w = random({5}, rng), b = random({5}, rng);
  expect_gradients([&] { return gelu(a); }, {a}, 21);
  expect_gradients([&] { return softmax(a); }, {a}, 22);
  expect_gradients([&] { return layer_norm(a, w, b); }, {a, w, b}, 23);
}

TEST(ReferenceCore, MaskedSoftmaxHidesKeysAndAFullyHiddenRowIsZero) {
  std::mt19937_64 rng(30);
  const Tensor s = random({3, 4}, rng);
  Tensor hidden = causal_mask(3, 4);
  for (int64_t j = 0; j < 4; ++j) hidden->data[2 * 4 + j] = 1;  // query 2 sees nothing
  const Tensor p = softmax(masked_fill(s, hidden));
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(p->data[2 * 4 + j], 0.0);
  EXPECT_EQ(p->data[0 * 4 + 1], 0.0);  // key 1 is after query 0
  EXPECT_NEAR(p->data[1 * 4 + 0] + p->data[1 * 4 + 1], 1.0, 1e-15);
  expect_gradients([&] { return softmax(masked_fill(s, hidden)); }, {s}, 31);
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(s->grad[2 * 4 + j], 0.0);
}

TEST(ReferenceCore, EmbeddingAndCrossEntropy) {
  std::mt19937_64 rng(40);
  const Tensor table = random({6, 3}, rng), logits = random({4, 6}, rng, true, -4, 4);
  const Tensor ids = tensor({2, 2}, {1, 5, 1, 0}), targets = tensor({4}, {0, 5, 2, 2});
  expect_gradients([&] { return embedding(ids, table); }, {table}, 41);  // id 1 twice: its row sums both
  expect_gradients([&] { return cross_entropy(logits, targets); }, {logits}, 42);
  const Tensor uniform = tensor({2, 6}, std::vector<double>(12, 0.25));
  EXPECT_NEAR(cross_entropy(uniform, tensor({2}, {3, 4}))->data[0], std::log(6.0), 1e-15);
}

TEST(ReferenceCore, AttentionWithMasksAndMultiheadAttention) {
  std::mt19937_64 rng(50);
  const Tensor q = random({2, 3, 4}, rng), k = random({2, 5, 4}, rng), v = random({2, 5, 2}, rng);
  const Tensor mask = random({3, 5}, rng, false), padding = tensor({2, 1, 5}, {0, 0, 0, 1, 1, 0, 1, 0, 0, 0});
  expect_gradients([&] { return attention(q, k, v, padding, mask).output; }, {q, k, v}, 51);
  expect_gradients([&] { return attention(q, k, v, causal_mask(3, 5)).weights; }, {q, k}, 52);
  const int64_t E = 4, H = 2;
  const AttentionWeights w{random({3 * E, E}, rng), random({3 * E}, rng), random({E, E}, rng), random({E}, rng)};
  const Tensor x = random({2, 3, E}, rng), kv = random({2, 5, E}, rng);
  const std::vector<Tensor> all = {x, kv, w.in_proj_weight, w.in_proj_bias, w.out_proj_weight, w.out_proj_bias};
  expect_gradients([&] { return multihead_attention(x, kv, kv, w, H, padding).output; }, all, 53);
  expect_gradients([&] { return multihead_attention(x, x, x, w, H, causal_mask(3, 3)).output; },
                   {x, w.in_proj_weight, w.in_proj_bias}, 54);
}

TEST(ReferenceCore, GPTLossGradientsOfEveryParameter) {
  const GPTConfig c{.vocab_size = 7, .n_layer = 2, .n_head = 2, .n_embd = 4, .block_size = 5};
  GPT gpt(c);
  std::mt19937_64 rng(60);
  std::normal_distribution<double> normal(0, 0.5);
  std::vector<Tensor> params;
  for (auto& [name, p] : gpt.params) {
    for (double& x : p->data) x += normal(rng);
    params.push_back(p);
  }
  const Tensor idx = tensor({2, 4}, {1, 3, 0, 6, 2, 2, 5, 4}), targets = tensor({2, 4}, {3, 0, 6, 1, 2, 5, 4, 0});
  EXPECT_EQ(gpt.forward(idx)->shape, (Shape{2, 4, 7}));
  expect_gradients([&] { return gpt.loss(idx, targets); }, params, 61);
}

TEST(ReferenceCore, BadInputIsOneClearError) {
  const Tensor a = zeros({2, 3}), b = zeros({4, 5});
  EXPECT_THROW(matmul(a, b), std::invalid_argument);
  EXPECT_THROW(add(a, zeros({4})), std::invalid_argument);
  EXPECT_THROW(backward(tensor({2}, {1, 2}, true)), std::invalid_argument);  // not a scalar, no seed
  EXPECT_THROW(cross_entropy(a, tensor({2}, {0, 3})), std::invalid_argument);
  EXPECT_THROW(embedding(tensor({1}, {2}), a), std::invalid_argument);
}

}  // namespace
