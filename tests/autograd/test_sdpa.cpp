// The blockwise attention ops (autograd/ops/sdpa.cpp, kernels/flash.h) against the materialised
// reference matmul(attention_probs(q, k), v): forward and backward, causal and not, L != S,
// sizes that are not multiples of the tile, rows that see no key; the float32 kernels against
// the float64 ones; self_attention_qkv against split heads; MultiheadAttention's blockwise path
// against its materialised one; memory that grows as O(T), not O(T²).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/engine.h"
#include "autograd/kernels/flash.h"
#include "autograd/ops.h"
#include "nn/attention.h"
#include "nn/init.h"
#include "tests/test_util.h"

namespace ag {
namespace {

struct Case {
  int64_t B, L, S, D, Dv;
  bool causal;
  int64_t offset;
};

// The materialised reference on (B, L, D), (B, S, D), (B, S, Dv).
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, int64_t offset) {
  return matmul(attention_probs(q, k, Tensor(), scale, causal, offset), v);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_double_vector(), y = b.to_double_vector();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

// Output and the gradients of Σ out ⊙ w (w random) for q, k, v: blockwise and reference.
struct Result {
  Tensor out, dq, dk, dv;
};
Result run(const Case& c, DType dt, bool blockwise, uint64_t seed = 3) {
  Generator g(seed);
  Tensor q = Tensor::randn({c.B, c.L, c.D}, DType::Float64, g).to(dt).requires_grad_();
  Tensor k = Tensor::randn({c.B, c.S, c.D}, DType::Float64, g).to(dt).requires_grad_();
  Tensor v = Tensor::randn({c.B, c.S, c.Dv}, DType::Float64, g).to(dt).requires_grad_();
  const Tensor w = Tensor::randn({c.B, c.L, c.Dv}, DType::Float64, g).to(dt);
  const double scale = 0.7;
  Tensor out = blockwise ? scaled_dot_product_attention(q, k, v, c.causal, scale, c.offset)
                         : reference(q, k, v, c.causal, scale, c.offset);
  sum(mul(out, w)).backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

void expect_equal(const Result& a, const Result& b, double tol, const std::string& what) {
  EXPECT_LE(max_abs_diff(a.out, b.out), tol) << what << ": output";
  EXPECT_LE(max_abs_diff(a.dq, b.dq), tol) << what << ": dq";
  EXPECT_LE(max_abs_diff(a.dk, b.dk), tol) << what << ": dk";
  EXPECT_LE(max_abs_diff(a.dv, b.dv), tol) << what << ": dv";
}

std::string name(const Case& c) {
  return "B" + std::to_string(c.B) + " L" + std::to_string(c.L) + " S" + std::to_string(c.S) + " D" +
         std::to_string(c.D) + " Dv" + std::to_string(c.Dv) + (c.causal ? " causal" : "") + " offset " +
         std::to_string(c.offset);
}

const int64_t T = kernels::flash::kTileQ;  // sizes around the tile, so that blocks are partial
const std::vector<Case> kCases = {
    {2, 5, 7, 3, 4, false, 0},           {2, 5, 7, 3, 4, true, 0},
    {1, T + 3, 2 * T + 5, 8, 5, false, 0},  // several key tiles: the running max and sum rescale
    {1, 2 * T + 5, T + 3, 8, 8, true, 0},   // L > S, causal: later rows see every key
    {3, T + 1, T + 1, 4, 4, true, 0},       // one row past the tile on the diagonal
    {2, 2 * T + 1, 2 * T + 1, 5, 3, true, 5}, {1, 9, 6, 2, 2, true, 2},
};

TEST(Sdpa, EqualsMaterialisedReferenceFloat64) {
  for (const Case& c : kCases) expect_equal(run(c, DType::Float64, true), run(c, DType::Float64, false), 1e-12, name(c));
}

TEST(Sdpa, Float32KernelsEqualFloat64) {
  for (const Case& c : kCases) {
    const Result f = run(c, DType::Float32, true), d = run(c, DType::Float64, true);
    expect_equal(f, d, 2e-5 * std::sqrt(static_cast<double>(c.S)), name(c) + " float32 vs float64");
  }
}

TEST(Sdpa, RowsThatSeeNoKeyGiveZerosAndZeroGradient) {
  // offset -3: queries 0, 1, 2 see no key (as attention_probs: zero probabilities, zero context)
  const Case c{2, T + 4, T + 4, 3, 3, true, -3};
  const Result r = run(c, DType::Float64, true);
  expect_equal(r, run(c, DType::Float64, false), 1e-12, name(c));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t e = 0; e < c.D; ++e) {
        EXPECT_EQ(r.out.at({b, i, e}), 0.0);
        EXPECT_EQ(r.dq.at({b, i, e}), 0.0);
      }
  // ... and all rows when no key is visible at all
  const Result none = run({1, 4, 3, 2, 2, true, -10}, DType::Float32, true);
  for (const Tensor& t : {none.out, none.dq, none.dk, none.dv})
    for (double x : t.to_double_vector()) EXPECT_EQ(x, 0.0);
}

TEST(Sdpa, SoftmaxGradRoundedGivesTheBitsOfSoftmaxGradThenARounding) {
  // Under bf16 autocast the backward computes each block's P and dS rounded as it writes them
  // (flash.h): the same bits as softmax_grad_block followed by a rounding of each, on both bf16
  // forms, for a block with a masked corner (−inf scores), a row that sees no key (lse = −inf),
  // a length off the vector width (37 columns) and a row stride wider than the block.
  const int64_t rows = 5, n = 37, ld = 40;
  Generator gen(21);
  const Tensor scores = Tensor::randn({rows, ld}, DType::Float32, gen);
  const Tensor dprobs = Tensor::randn({rows, ld}, DType::Float32, gen);
  std::vector<float> s(scores.data<float>(), scores.data<float>() + rows * ld);
  std::vector<float> dp(dprobs.data<float>(), dprobs.data<float>() + rows * ld);
  kernels::flash::mask_block(s.data(), rows, n, ld, 0, 3, 0);  // key j > row i + 0 hidden, from key 3
  std::vector<float> lse(rows), drow(rows);
  for (int64_t r = 0; r < rows; ++r) lse[r] = 1.5f + 0.25f * r, drow[r] = 0.1f * r - 0.2f;
  lse[2] = -INFINITY;
  for (const bool native : {true, false}) {
    std::vector<float> s_ref = s, dp_ref = dp;
    kernels::flash::softmax_grad_block(s_ref.data(), dp_ref.data(), rows, n, ld, lse.data(), drow.data());
    kernels::Bf16Matrix p_ref, ds_ref, p, ds;
    p_ref.round(s_ref.data(), rows, n, ld, native);
    ds_ref.round(dp_ref.data(), rows, n, ld, native);
    kernels::flash::softmax_grad_block_rounded(s.data(), dp.data(), rows, n, ld, lse.data(), drow.data(), p, ds, native);
    ASSERT_EQ(p.rows(), rows);
    ASSERT_EQ(ds.cols(), n);
    const size_t bytes = static_cast<size_t>(rows * n) * (native ? 2 : 4);
    EXPECT_EQ(std::memcmp(p.data(), p_ref.data(), bytes), 0) << "P, native " << native;
    EXPECT_EQ(std::memcmp(ds.data(), ds_ref.data(), bytes), 0) << "dS, native " << native;
  }
}

TEST(Sdpa, DefaultScaleIsOneOverSqrtDAndBatchDimsAreKept) {
  Generator g(11);
  const Tensor q = Tensor::randn({2, 3, 5, 4}, DType::Float64, g), k = Tensor::randn({2, 3, 6, 4}, DType::Float64, g),
               v = Tensor::randn({2, 3, 6, 2}, DType::Float64, g);
  const Tensor o = scaled_dot_product_attention(q, k, v, true);
  ASSERT_EQ(o.shape(), (Shape{2, 3, 5, 2}));
  const Tensor ref = reference(reshape(q, {6, 5, 4}), reshape(k, {6, 6, 4}), reshape(v, {6, 6, 2}), true, 0.5, 0);
  EXPECT_LE(max_abs_diff(reshape(o, {6, 5, 2}), ref), 1e-12);
}

TEST(Sdpa, StridedViewsAreReadInPlaceWithTheSameResult) {
  // q, k, v as heads of one (N, L, 3, H, hd) projection: batch dims (N, H) strided, rows contiguous
  const int64_t N = 2, L = T + 7, H = 3, hd = 4;
  Generator g(5);
  Tensor x = Tensor::randn({N, L, 3 * H * hd}, DType::Float64, g).requires_grad_();
  auto head = [&](const Tensor& t, int64_t i) {  // (N, H, L, hd) view
    return permute(squeeze(narrow(reshape(t, {N, L, 3, H, hd}), 2, i, 1), 2), {0, 2, 1, 3});
  };
  const Tensor o = scaled_dot_product_attention(head(x, 0), head(x, 1), head(x, 2), true);
  const Tensor oc = scaled_dot_product_attention(head(x, 0).contiguous(), head(x, 1).contiguous(),
                                                 head(x, 2).contiguous(), true);
  EXPECT_LE(max_abs_diff(o, oc), 1e-14);
  const Tensor w = Tensor::randn(o.shape(), DType::Float64, g);
  const auto g1 = grad({sum(mul(o, w))}, {x}), g2 = grad({sum(mul(oc, w))}, {x});
  EXPECT_LE(max_abs_diff(g1[0], g2[0]), 1e-13);
}

// self_attention_qkv (N, L, 3E) equals split heads -> scaled_dot_product_attention -> merge heads.
TEST(Sdpa, SelfAttentionQkvEqualsSplitHeads) {
  for (DType dt : {DType::Float64, DType::Float32})
    for (bool causal : {false, true}) {
      const int64_t N = 2, L = T + 9, H = 2, hd = 5, E = H * hd;
      Generator g(9);
      Tensor x = Tensor::randn({N, L, 3 * E}, DType::Float64, g).to(dt).requires_grad_();
      const Tensor w = Tensor::randn({N, L, E}, DType::Float64, g).to(dt);
      const Tensor o = self_attention_qkv(x, H, causal);
      auto head = [&](int64_t i) {  // (N·H, L, hd), copied
        return reshape(permute(reshape(narrow(x, 2, i * E, E), {N, L, H, hd}), {0, 2, 1, 3}), {N * H, L, hd});
      };
      const Tensor ref = reshape(
          permute(reshape(reference(head(0), head(1), head(2), causal, 1 / std::sqrt(5.0), 0), {N, H, L, hd}),
                  {0, 2, 1, 3}),
          {N, L, E});
      const double tol = dt == DType::Float64 ? 1e-12 : 1e-5;
      EXPECT_LE(max_abs_diff(o, ref), tol);
      const auto g1 = grad({sum(mul(o, w))}, {x}), g2 = grad({sum(mul(ref, w))}, {x});
      EXPECT_LE(max_abs_diff(g1[0], g2[0]), tol * 10);
    }
}

TEST(Sdpa, SecondOrderThroughCreateGraphMatchesTheReference) {
  Generator g(21);
  Tensor q = Tensor::randn({2, 6, 3}, DType::Float64, g).requires_grad_();
  Tensor k = Tensor::randn({2, 6, 3}, DType::Float64, g).requires_grad_();
  Tensor v = Tensor::randn({2, 6, 3}, DType::Float64, g).requires_grad_();
  auto hvp = [&](bool blockwise) {
    const Tensor o = blockwise ? scaled_dot_product_attention(q, k, v, true) : reference(q, k, v, true, 1 / std::sqrt(3.0), 0);
    const auto g1 = grad({sum(mul(o, o))}, {q, k, v}, {}, {.create_graph = true});
    return grad({sum(mul(g1[0], g1[0])) + sum(mul(g1[1], g1[2]))}, {q, k, v});
  };
  const auto a = hvp(true), b = hvp(false);
  for (int i = 0; i < 3; ++i) EXPECT_LE(max_abs_diff(a[i], b[i]), 1e-12);
}

// O(T) memory: doubling T at most doubles the peak of tensor storage over forward + backward
// (the materialised path quadruples its (B, T, T) probabilities).
TEST(Sdpa, PeakMemoryGrowsLinearlyWithLength) {
  auto peak = [](int64_t len, bool blockwise) {
    Generator g(1);
    Tensor x = Tensor::randn({2, len, 3 * 64}, DType::Float32, g).requires_grad_();
    const int64_t base = memory_stats().current_bytes;
    reset_peak_memory();
    {
      const Tensor o = blockwise ? self_attention_qkv(x, 2, true)
                                 : [&] {
                                     auto head = [&](int64_t i) {
                                       return reshape(permute(reshape(narrow(x, 2, i * 64, 64), {2, len, 2, 32}),
                                                              {0, 2, 1, 3}),
                                                      {4, len, 32});
                                     };
                                     return reference(head(0), head(1), head(2), true, 0.2, 0);
                                   }();
      sum(o).backward();
    }
    return static_cast<double>(memory_stats().peak_bytes - base);
  };
  const double f1 = peak(512, true), f2 = peak(1024, true), m1 = peak(512, false), m2 = peak(1024, false);
  EXPECT_LE(f2 / f1, 2.1) << f1 << " -> " << f2 << " bytes";
  EXPECT_GE(m2 / m1, 3.0) << "the reference should grow as T²: " << m1 << " -> " << m2;
  EXPECT_LT(f2, m2 / 5);
}

TEST(MhaBlockwise, EqualsMaterialisedPathSelfAndCrossAttention) {
  using nn::MultiheadAttention;
  for (bool self : {true, false})
    for (bool causal : {false, true}) {
      Generator g(13);
      MultiheadAttention mha(8, 2, 0.0, true, true, DType::Float64, g);
      for (auto& [n, p] : mha.named_parameters()) nn::init::uniform_(p, -0.5, 0.5, g);
      const int64_t L = T + 2, S = self ? L : T - 5;
      Tensor q = Tensor::randn({2, L, 8}, DType::Float64, g).requires_grad_();
      Tensor kv = self ? q : Tensor::randn({2, S, 8}, DType::Float64, g).requires_grad_();
      const Tensor w = Tensor::randn({2, L, 8}, DType::Float64, g);
      std::vector<Tensor> inputs = mha.parameters();
      inputs.push_back(q);
      if (!self) inputs.push_back(kv);
      auto grads = [&](bool need_weights) {  // need_weights takes the materialised path
        const Tensor o = mha.forward(q, kv, kv, Tensor(), need_weights, Tensor(), true, causal).output;
        auto gs = grad({sum(mul(o, w))}, inputs);
        gs.push_back(o.detach());
        return gs;
      };
      const auto a = grads(false), b = grads(true);
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_LE(max_abs_diff(a[i], b[i]), 1e-12) << (self ? "self" : "cross") << (causal ? " causal" : "") << " #" << i;
    }
}

TEST(Sdpa, BadInputNamesTheOpAndShapes) {
  using testing_util::error_of;
  const Tensor a = Tensor::zeros({2, 3, 4}), b = Tensor::zeros({3, 3, 4}), c = Tensor::zeros({2, 5, 4});
  EXPECT_NE(error_of<std::invalid_argument>([&] { scaled_dot_product_attention(a, b, b); })
                .find("scaled_dot_product_attention: expected q (..., L, D)"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { scaled_dot_product_attention(a, c, a); }).find("float32[2, 3, 4]"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { scaled_dot_product_attention(a, a, a.to(DType::Float64)); })
                .find("dtype mismatch"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { self_attention_qkv(Tensor::zeros({2, 3, 10}), 2); })
                .find("self_attention_qkv: expected qkv (N, L, 3·E)"),
            std::string::npos);
}

}  // namespace
}  // namespace ag
