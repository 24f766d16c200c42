// Every fast path of the library against the reference core (reference/, plain float64 loops,
// itself checked against finite differences in test_reference_core.cpp): the engine's ops, the
// fused kernels, flash attention on every path MultiheadAttention takes, the oneDNN and bf16
// GEMMs, and a whole GPT training step (loss and every parameter's gradient), on randomized
// shapes, masks and seeds. A float64 path agrees to rounding, a float32 one to float32's and a
// bf16 one to bf16's (`tolerance` below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"
#include "reference/gpt.h"

namespace {

using namespace ag;
namespace R = ag::ref;

// ---- between the two libraries ------------------------------------------------------------------

R::Tensor ref_of(const Tensor& t, bool requires_grad = false) {
  return R::tensor(t.shape(), t.to_double_vector(), requires_grad);
}
// Random values in dtype, and the reference's copy of exactly those values.
Tensor randn(const Shape& shape, DType dtype, Generator& gen, double s = 1) {
  return mul(Tensor::randn(shape, DType::Float64, gen), s).to(dtype);
}

// What the fast path's rounding allows: relative to the reference's largest magnitude, the
// largest difference (float64, float32) or the root-mean-square one (bf16, whose every product
// is rounded to 8 bits). Measured here on a Sapphire Rapids: at most 4e-15, 2.2e-6 and 2.5e-2
// (the first layer's gradients of a 3-layer GPT, through every rounded GEMM after it).
enum class Precision64 { F64, F32, BF16 };
double tolerance(Precision64 p) { return p == Precision64::F64 ? 1e-12 : p == Precision64::F32 ? 2e-5 : 5e-2; }
Precision64 precision_of(DType dt) { return dt == DType::Float64 ? Precision64::F64 : Precision64::F32; }

// The largest and the root-mean-square magnitude of some values.
struct Magnitude {
  double max = 0, rms = 0;
};
Magnitude magnitude(const std::vector<double>& v) {
  Magnitude m;
  for (double x : v) m.max = std::max(m.max, std::fabs(x)), m.rms += x * x;
  m.rms = v.empty() ? 0 : std::sqrt(m.rms / static_cast<double>(v.size()));
  return m;
}
Magnitude larger(Magnitude a, Magnitude b) { return {std::max(a.max, b.max), std::max(a.rms, b.rms)}; }

// How far the fast values are from the reference's, relative to the reference's magnitude, or to
// `floor` where that is larger: the gradients of one call are measured against the largest of
// them, so that a gradient that is exactly zero in the reference (softmax over one key: dq = 0)
// is not held to a relative tolerance of its rounding noise.
double disagreement(const std::vector<double>& fast, const std::vector<double>& ref, Precision64 p, Magnitude floor = {}) {
  if (fast.size() != ref.size()) return INFINITY;
  std::vector<double> diff(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(fast[i])) return INFINITY;  // NaN or infinite: never agreement
    diff[i] = fast[i] - ref[i];
  }
  const Magnitude err = magnitude(diff), scale = larger(magnitude(ref), floor);
  if (p == Precision64::BF16) return err.rms / std::max(scale.rms, 1e-300);
  return err.max / std::max(scale.max, 1e-300);
}

#define EXPECT_AGREES(fast_values, ref_values, precision, what, ...)                                               \
  EXPECT_LE(disagreement((fast_values), (ref_values), (precision), ##__VA_ARGS__), tolerance(precision))           \
      << (what) << " ("                                                                                            \
      << ((precision) == Precision64::F64 ? "float64" : (precision) == Precision64::F32 ? "float32" : "bf16") << ")"

// Runs one op both ways on the same values, seeds both outputs with the same random gradient and
// compares the output and the gradient of every input that requires grad.
void expect_op_agrees(const std::string& what, DType dt, const std::vector<Tensor>& inputs,
                      const std::function<Tensor(const std::vector<Tensor>&)>& fast,
                      const std::function<R::Tensor(const std::vector<R::Tensor>&)>& reference, Generator& gen) {
  std::vector<Tensor> xs;
  std::vector<R::Tensor> rs;
  for (const Tensor& in : inputs) {
    xs.push_back(in.detach().to(dt).clone().requires_grad_(in.requires_grad()));
    rs.push_back(ref_of(xs.back(), in.requires_grad()));
  }
  const Tensor out = fast(xs);
  const R::Tensor ref = reference(rs);
  ASSERT_EQ(out.shape(), ref->shape) << what;
  const Precision64 p = precision_of(dt);
  EXPECT_AGREES(out.to_double_vector(), ref->data, p, what + ": forward");
  const Tensor g = randn(out.shape(), dt, gen);
  out.backward(g);
  R::backward(ref, ref_of(g));
  Magnitude grads;  // the largest of the inputs' gradients
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].requires_grad()) grads = larger(grads, magnitude(rs[i]->grad));
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].requires_grad()) {
      EXPECT_AGREES(xs[i].grad().to_double_vector(), rs[i]->grad, p, what + ": gradient of input " + std::to_string(i), grads);
    }
}

// ---- the engine's ops ----------------------------------------------------------------------------

TEST(ReferenceAgreement, EngineOpsOnRandomShapes) {
  for (const DType dt : {DType::Float64, DType::Float32}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      Generator gen(seed);
      auto dim = [&](int64_t lo, int64_t hi) { return gen.randint(lo, hi + 1); };
      const int64_t B = dim(1, 3), M = dim(1, 9), K = dim(1, 9), N = dim(1, 9), C = dim(2, 40);
      const std::string at = " (seed " + std::to_string(seed) + ")";
      auto x = [&](const Shape& s, double scale = 1) { return randn(s, dt, gen, scale).requires_grad_(); };
      const auto a3 = x({B, M, K}), b3 = x({B, K, N}), b2 = x({K, N}), bt = x({N, K}), m2 = x({M, K});
      using V = std::vector<Tensor>;
      using RV = std::vector<R::Tensor>;
      expect_op_agrees("matmul 2-d" + at, dt, {m2, b2}, [](const V& v) { return matmul(v[0], v[1]); },
                       [](const RV& v) { return R::matmul(v[0], v[1]); }, gen);
      expect_op_agrees("matmul batched" + at, dt, {a3, b3}, [](const V& v) { return matmul(v[0], v[1]); },
                       [](const RV& v) { return R::matmul(v[0], v[1]); }, gen);
      expect_op_agrees("matmul with a shared (K, N)" + at, dt, {a3, b2}, [](const V& v) { return matmul(v[0], v[1]); },
                       [](const RV& v) { return R::matmul(v[0], v[1]); }, gen);
      expect_op_agrees("matmul by a transposed view" + at, dt, {a3, bt},
                       [](const V& v) { return matmul(v[0], transpose(v[1], 0, 1)); },
                       [](const RV& v) { return R::matmul(v[0], R::transpose(v[1], 0, 1)); }, gen);
      expect_op_agrees("linear" + at, dt, {a3, bt, x({N})}, [](const V& v) { return linear(v[0], v[1], v[2]); },
                       [](const RV& v) { return R::linear(v[0], v[1], v[2]); }, gen);
      for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{B, M, C}, {M, C}}, {{B, 1, C}, {M, 1}}, {{M, 1}, {C}}, {{B, M, C}, {1}}})
        expect_op_agrees("add " + shape_str(sa) + " + " + shape_str(sb) + at, dt, {x(sa), x(sb)},
                         [](const V& v) { return add(v[0], v[1]); }, [](const RV& v) { return R::add(v[0], v[1]); }, gen);
      const auto rows = x({B, M, C}, 3);
      expect_op_agrees("gelu" + at, dt, {rows}, [](const V& v) { return gelu(v[0]); },
                       [](const RV& v) { return R::gelu(v[0]); }, gen);
      expect_op_agrees("softmax" + at, dt, {rows}, [](const V& v) { return softmax(v[0], -1); },
                       [](const RV& v) { return R::softmax(v[0]); }, gen);
      // A causal mask hides part of every row but the last.
      const Tensor hidden = Tensor::from_vector(std::vector<double>(R::causal_mask(M, C)->data), {M, C}, DType::Float64);
      expect_op_agrees("masked_fill then softmax" + at, dt, {rows},
                       [&](const V& v) { return softmax(masked_fill(v[0], ne(hidden, 0.0), -INFINITY), -1); },
                       [&](const RV& v) { return R::softmax(R::masked_fill(v[0], ref_of(hidden))); }, gen);
      expect_op_agrees("layer_norm" + at, dt, {rows, x({C}), x({C})},
                       [](const V& v) { return layer_norm(v[0], v[1], v[2]); },
                       [](const RV& v) { return R::layer_norm(v[0], v[1], v[2]); }, gen);
      const Tensor ids = Tensor::randint(0, C, {B, M}, gen), targets = Tensor::randint(0, C, {B * M}, gen);
      expect_op_agrees("embedding" + at, dt, {x({C, K})}, [&](const V& v) { return embedding(ids, v[0]); },
                       [&](const RV& v) { return R::embedding(ref_of(ids), v[0]); }, gen);
      expect_op_agrees("cross_entropy" + at, dt, {x({B * M, C}, 3)}, [&](const V& v) { return cross_entropy(v[0], targets); },
                       [&](const RV& v) { return R::cross_entropy(v[0], ref_of(targets)); }, gen);
    }
  }
}

// ---- fused kernels and flash attention ------------------------------------------------------------

// The reference's attention of q (..., L, d), k, v with the causal rule and an additive mask.
R::Attention ref_attention(const R::Tensor& q, const R::Tensor& k, const R::Tensor& v, bool causal,
                           const R::Tensor& mask = nullptr) {
  const int64_t L = q->shape[q->shape.size() - 2], S = k->shape[k->shape.size() - 2];
  return R::attention(q, k, v, causal ? R::causal_mask(L, S) : nullptr, mask);
}

TEST(ReferenceAgreement, FusedKernelsAndFlashAttention) {
  using V = std::vector<Tensor>;
  using RV = std::vector<R::Tensor>;
  for (const DType dt : {DType::Float64, DType::Float32}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      Generator gen(100 + seed);
      auto dim = [&](int64_t lo, int64_t hi) { return gen.randint(lo, hi + 1); };
      auto x = [&](const Shape& s, double scale = 1) { return randn(s, dt, gen, scale).requires_grad_(); };
      const std::string at = " (seed " + std::to_string(seed) + ")";
      // The fused MLP: proj(gelu(fc(x))) as one node.
      const int64_t B = dim(1, 3), T = dim(1, 12), E = dim(1, 16), F = dim(1, 40);
      expect_op_agrees("gelu_mlp" + at, dt, {x({B, T, E}), x({F, E}), x({F}), x({E, F}), x({E})},
                       [](const V& v) { return gelu_mlp(v[0], v[1], v[2], v[3], v[4]); },
                       [](const RV& v) { return R::linear(R::gelu(R::linear(v[0], v[1], v[2])), v[3], v[4]); }, gen);
      // Attention: long enough on the last seeds for several 128-row tiles, partial ones, and
      // causal tiles that cross the diagonal.
      const int64_t H = dim(1, 3), L = seed > 2 ? dim(120, 300) : dim(1, 9), S = seed > 2 ? dim(120, 300) : dim(1, 9);
      const int64_t D = dim(1, 8);
      for (const bool causal : {false, true}) {
        const std::string what = std::string(causal ? " causal" : "") + " L " + std::to_string(L) + " S " + std::to_string(S) + at;
        const Tensor mask = randn({L, S}, dt, gen);  // additive
        expect_op_agrees("attention_probs" + what, dt, {x({B * H, L, D}), x({B * H, S, D}), mask.requires_grad_()},
                         [&](const V& v) { return attention_probs(v[0], v[1], v[2], 1 / std::sqrt(double(D)), causal); },
                         [&](const RV& v) { return ref_attention(v[0], v[1], R::zeros({B * H, S, 1}), causal, v[2]).weights; }, gen);
        expect_op_agrees("scaled_dot_product_attention" + what, dt, {x({B, H, L, D}), x({B, H, S, D}), x({B, H, S, D + 1})},
                         [&](const V& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal); },
                         [&](const RV& v) { return ref_attention(v[0], v[1], v[2], causal).output; }, gen);
        // Packed self-attention: qkv (B, L, 3·H·D), heads read in place.
        expect_op_agrees("self_attention_qkv" + what, dt, {x({B, L, 3 * H * D})},
                         [&](const V& v) { return self_attention_qkv(v[0], H, causal); },
                         [&](const RV& v) {
                           auto heads = [&](int64_t part) {  // (B, L, H·D) -> (B, H, L, D)
                             return R::transpose(R::reshape(R::narrow(v[0], part * H * D, H * D), {B, L, H, D}), 1, 2);
                           };
                           const R::Tensor o = ref_attention(heads(0), heads(1), heads(2), causal).output;
                           return R::reshape(R::transpose(o, 1, 2), {B, L, H * D});
                         },
                         gen);
      }
    }
  }
}

// ---- MultiheadAttention, every path ---------------------------------------------------------------

// Which kernel a forward ran, read from the ops it recorded.
std::string kernel_recorded(const std::function<void()>& forward) {
  std::set<std::string> ops;
  {
    const ObserveRecordGuard watch([&](const Node& n, const Tensor&, const std::vector<Tensor>&, const SourceLocation&) {
      ops.insert(op_name(n));
    });
    forward();
  }
  for (const char* k : {"self_attention_qkv", "scaled_dot_product_attention", "attention_probs", "softmax"})
    if (ops.count(k)) return k;
  return "none";
}

struct MhaCase {
  int64_t E, H, N, L, S;
  bool self_attention, batch_first, need_weights, causal, unfused;
  bool padding;         // a key_padding_mask (bool), some rows fully hidden
  int attn_mask;        // 0 none, 1 bool (L, S), 2 float (L, S), 3 bool (N·H, L, S)
  double dropout;       // the module's p; the module is in eval(), so no dropout runs
  const char* expect;   // the kernel it must run
};

std::string describe(const MhaCase& c) {
  return "E " + std::to_string(c.E) + " H " + std::to_string(c.H) + " N " + std::to_string(c.N) + " L " + std::to_string(c.L) +
         " S " + std::to_string(c.S) + (c.self_attention ? " self" : " cross") + (c.batch_first ? " batch_first" : "") +
         (c.need_weights ? " need_weights" : "") + (c.causal ? " causal" : "") + (c.unfused ? " unfused" : "") +
         (c.padding ? " key_padding" : "") + " attn_mask " + std::to_string(c.attn_mask) + " dropout " + std::to_string(c.dropout) +
         " -> " + c.expect;
}

// One MultiheadAttention call (dt, under the current GEMM provider and autocast precision) against
// the reference's multihead_attention on the same weights, inputs and masks.
void expect_mha_agrees(const MhaCase& c, DType dt, Precision64 p, uint64_t seed, ag::Precision autocast = ag::Precision::FP32) {
  Generator gen(seed);
  const std::string what = describe(c) + " (seed " + std::to_string(seed) + ")";
  nn::MultiheadAttention mha(c.E, c.H, c.dropout, true, c.batch_first, dt, gen);
  mha.eval();
  for (auto& [name, w] : mha.named_parameters()) {  // biases are zero at init: make them count
    NoGradGuard no_grad;
    w.copy_(randn(w.shape(), dt, gen, 0.5));
  }
  const int64_t N = c.N, L = c.L, S = c.self_attention ? c.L : c.S, H = c.H;
  // Inputs batch first (N, L|S, E) for the reference; the module's layout from them.
  const Tensor q = randn({N, L, c.E}, dt, gen), k = c.self_attention ? q : randn({N, S, c.E}, dt, gen);
  const Tensor v = c.self_attention ? q : randn({N, S, c.E}, dt, gen);
  auto layout = [&](const Tensor& t) { return (c.batch_first ? t : transpose(t, 0, 1).contiguous()).clone().requires_grad_(); };
  const Tensor fq = layout(q), fk = c.self_attention ? fq : layout(k), fv = c.self_attention ? fq : layout(v);
  // Masks, and the reference's hidden (N, H, L, S) and additive mask.
  std::vector<double> hidden(static_cast<size_t>(N * H * L * S), 0.0);
  auto hide = [&](int64_t n, int64_t h, int64_t i, int64_t j) { hidden[static_cast<size_t>(((n * H + h) * L + i) * S + j)] = 1; };
  Tensor kpm, attn_mask;
  R::Tensor ref_mask;
  if (c.padding) {
    std::vector<bool> pad(static_cast<size_t>(N * S));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < S; ++j) pad[n * S + j] = n == 0 ? j % 2 == 1 : (n == 1 || gen.uniform() < 0.3);  // batch 1: all hidden
    kpm = Tensor::from_vector(pad, {N, S});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < S; ++j)
        if (pad[n * S + j])
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < L; ++i) hide(n, h, i, j);
  }
  if (c.attn_mask == 1 || c.attn_mask == 3) {
    const int64_t R3 = c.attn_mask == 3 ? N * H : 1;
    std::vector<bool> m(static_cast<size_t>(R3 * L * S));
    for (size_t i = 0; i < m.size(); ++i) m[i] = gen.uniform() < 0.3;
    attn_mask = c.attn_mask == 3 ? Tensor::from_vector(m, {N * H, L, S}) : Tensor::from_vector(m, {L, S});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < S; ++j)
            if (m[static_cast<size_t>(((c.attn_mask == 3 ? n * H + h : 0) * L + i) * S + j)]) hide(n, h, i, j);
  } else if (c.attn_mask == 2) {
    attn_mask = randn({L, S}, dt, gen);
    ref_mask = ref_of(attn_mask);
  }
  if (c.causal)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = i + 1; j < S; ++j) hide(n, h, i, j);

  nn::MultiheadAttention::Output out;
  const std::string kernel = kernel_recorded([&] {
    std::optional<nn::UnfusedAttentionGuard> unfused;
    if (c.unfused) unfused.emplace();
    AutocastGuard precision(autocast);
    out = mha.forward(fq, fk, fv, kpm, c.need_weights, attn_mask, /*average_attn_weights=*/false, c.causal);
  });
  EXPECT_EQ(kernel, c.expect) << what;
  const Tensor g = randn(out.output.shape(), dt, gen);
  out.output.backward(g);

  R::AttentionWeights rw;
  R::Tensor* slots[] = {&rw.in_proj_weight, &rw.in_proj_bias, &rw.out_proj_weight, &rw.out_proj_bias};
  const char* names[] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
  const auto params = mha.named_parameters();
  for (int i = 0; i < 4; ++i) *slots[i] = ref_of(params[names[i]], true);
  const R::Tensor rq = ref_of(q, true), rk = c.self_attention ? rq : ref_of(k, true), rv = c.self_attention ? rq : ref_of(v, true);
  const bool any_hidden = c.padding || c.causal || c.attn_mask == 1 || c.attn_mask == 3;
  const R::Attention ref = R::multihead_attention(rq, rk, rv, rw, H, any_hidden ? R::tensor({N, H, L, S}, hidden) : nullptr, ref_mask);
  R::backward(ref.output, ref_of(c.batch_first ? g : transpose(g, 0, 1).contiguous()));

  auto batch_first = [&](const Tensor& t) { return (c.batch_first ? t : transpose(t, 0, 1)).contiguous().to_double_vector(); };
  EXPECT_AGREES(batch_first(out.output), ref.output->data, p, what + ": output");
  if (c.need_weights) {
    EXPECT_AGREES(out.weights.to_double_vector(), ref.weights->data, p, what + ": weights");
  }
  Magnitude grads = larger(magnitude(rq->grad), larger(magnitude(rk->grad), magnitude(rv->grad)));  // the largest gradient
  for (int i = 0; i < 4; ++i) grads = larger(grads, magnitude((*slots[i])->grad));
  EXPECT_AGREES(batch_first(fq.grad()), rq->grad, p, what + ": dquery", grads);
  if (!c.self_attention) {
    EXPECT_AGREES(batch_first(fk.grad()), rk->grad, p, what + ": dkey", grads);
    EXPECT_AGREES(batch_first(fv.grad()), rv->grad, p, what + ": dvalue", grads);
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_AGREES(params[names[i]].grad().to_double_vector(), (*slots[i])->grad, p, what + ": d" + names[i], grads);
}

// Random cases of each path: sizes, layouts and masks drawn from the seed.
std::vector<MhaCase> mha_cases(uint64_t seed) {
  Generator gen(seed);
  auto dim = [&](int64_t lo, int64_t hi) { return gen.randint(lo, hi + 1); };
  auto coin = [&] { return gen.uniform() < 0.5; };
  std::vector<MhaCase> cases;
  auto base = [&] {
    MhaCase c{};
    c.H = dim(1, 3), c.E = c.H * dim(1, 4), c.N = dim(1, 3), c.L = dim(1, 9), c.S = dim(1, 9);
    c.batch_first = coin(), c.dropout = coin() ? 0.0 : 0.3;
    return c;
  };
  // Packed flash: self-attention, no weights, no mask (causal or not).
  MhaCase c = base();
  c.self_attention = true, c.causal = coin(), c.expect = "self_attention_qkv";
  cases.push_back(c);
  // Strided flash: cross-attention, no weights, no mask.
  c = base();
  c.causal = coin(), c.expect = "scaled_dot_product_attention";
  cases.push_back(c);
  // Fused probabilities: weights asked for, or a mask; self or cross.
  for (int m = 0; m <= 3; ++m) {
    c = base();
    c.self_attention = coin(), c.need_weights = m == 0 || coin(), c.causal = coin(), c.attn_mask = m;
    c.padding = m == 0 ? !c.need_weights || coin() : coin();
    c.N = std::max<int64_t>(c.N, 2);  // batch 1's keys all hidden by the padding: a fully masked row
    c.expect = "attention_probs";
    cases.push_back(c);
  }
  // Unfused: the primitive ops (UnfusedAttentionGuard), with masks but none fully hidden (NaN there, as torch).
  c = base();
  c.unfused = true, c.need_weights = coin(), c.attn_mask = 2, c.causal = coin(), c.expect = "softmax";
  if (c.causal) c.S = c.L;
  cases.push_back(c);
  return cases;
}

TEST(ReferenceAgreement, MultiheadAttentionOnEveryPath) {
  for (const DType dt : {DType::Float64, DType::Float32})
    for (uint64_t seed = 1; seed <= 5; ++seed)
      for (const MhaCase& c : mha_cases(seed)) expect_mha_agrees(c, dt, precision_of(dt), 1000 * seed + c.E);
}

// ---- the oneDNN and bf16 GEMMs ----------------------------------------------------------------------

TEST(ReferenceAgreement, MultiheadAttentionOnEveryGemmProviderAndPrecision) {
  for (const auto provider : kernels::kGemmProviders) {
    if (!kernels::gemm_provider_available(provider)) continue;
    const kernels::GemmProviderGuard use(provider);
    for (const ag::Precision precision : {ag::Precision::FP32, ag::Precision::BF16})
      for (const MhaCase& c : mha_cases(7))
        expect_mha_agrees(c, DType::Float32, precision == ag::Precision::BF16 ? Precision64::BF16 : Precision64::F32, 77,
                          precision);
  }
}

// ---- a whole GPT step ---------------------------------------------------------------------------------

// One training step's loss and every parameter's gradient, the library's GPT against the reference's
// on the same weights (copied by name) and batch.
void expect_gpt_step_agrees(uint64_t seed, DType dt, Precision64 p, ag::Precision autocast = ag::Precision::FP32) {
  Generator gen(seed);
  auto dim = [&](int64_t lo, int64_t hi) { return gen.randint(lo, hi + 1); };
  models::GPTConfig cfg;
  // float32 and bf16 at least 8 wide: a layer norm over 2 values leaves too few terms for bf16's
  // rounding to average out.
  const int64_t head_dim = p == Precision64::F64 ? dim(1, 6) : dim(4, 8);
  cfg.vocab_size = dim(2, 20), cfg.n_layer = dim(1, 3), cfg.n_head = dim(1, 3), cfg.n_embd = cfg.n_head * head_dim;
  cfg.block_size = dim(2, 16);
  const int64_t B = dim(1, 3), T = dim(1, cfg.block_size);
  const std::string what = "GPT vocab " + std::to_string(cfg.vocab_size) + " layers " + std::to_string(cfg.n_layer) + " heads " +
                           std::to_string(cfg.n_head) + " width " + std::to_string(cfg.n_embd) + " B " + std::to_string(B) +
                           " T " + std::to_string(T) + " (seed " + std::to_string(seed) + ")";
  models::TransformerLM model(cfg, dt, gen);
  R::GPT ref(R::GPTConfig{cfg.vocab_size, cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.block_size});
  const auto params = model.named_parameters();
  ASSERT_EQ(params.size(), ref.params.size()) << what;
  for (auto& [name, t] : params) {
    NoGradGuard no_grad;
    t.copy_(add(t, randn(t.shape(), dt, gen, 0.1)));  // biases and norms off their init values
    ASSERT_EQ(ref.params.count(name), 1u) << "the reference GPT has no parameter " << name;
    ASSERT_EQ(ref.params[name]->shape, t.shape()) << name;
    ref.params[name]->data = t.to_double_vector();
  }
  const Tensor idx = Tensor::randint(0, cfg.vocab_size, {B, T}, gen), targets = Tensor::randint(0, cfg.vocab_size, {B, T}, gen);
  Tensor loss;
  {
    AutocastGuard precision(autocast);
    loss = model.loss(idx, targets);
  }
  loss.backward();
  const R::Tensor ref_loss = ref.loss(ref_of(idx), ref_of(targets));
  R::backward(ref_loss);
  EXPECT_AGREES(loss.to_double_vector(), ref_loss->data, p, what + ": loss");
  for (auto& [name, t] : params) EXPECT_AGREES(t.grad().to_double_vector(), ref.params[name]->grad, p, what + ": d" + name);
}

TEST(ReferenceAgreement, GptStepLossAndEveryGradientInFloat64) {
  for (uint64_t seed = 1; seed <= 6; ++seed) expect_gpt_step_agrees(seed, DType::Float64, Precision64::F64);
}

TEST(ReferenceAgreement, GptStepInFloat32OnEveryGemmProviderAndPrecision) {
  for (const auto provider : kernels::kGemmProviders) {
    if (!kernels::gemm_provider_available(provider)) continue;
    const kernels::GemmProviderGuard use(provider);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      expect_gpt_step_agrees(seed, DType::Float32, Precision64::F32);
      expect_gpt_step_agrees(seed, DType::Float32, Precision64::BF16, ag::Precision::BF16);
    }
  }
}

}  // namespace
