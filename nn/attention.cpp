#include "nn/attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/attention.h"
#include "base/checked.h"
#include "nn/init.h"

namespace ag::nn {

namespace {

std::string dims(std::initializer_list<int64_t> d) { return shape_str(Shape(d)); }

// (N, L, E) -> (N·H, L, hd): one copy into head-major layout.
Tensor split_heads(const Tensor& x, int64_t H) {
  const int64_t N = x.size(0), L = x.size(1), E = x.size(2);
  return reshape(permute(reshape(x, {N, L, H, E / H}), {0, 2, 1, 3}), {N * H, L, E / H});
}

// (N·H, L, hd) -> (N, L, E): the inverse of split_heads.
Tensor merge_heads(const Tensor& x, int64_t N, int64_t H) {
  const int64_t L = x.size(1), hd = x.size(2);
  return reshape(permute(reshape(x, {N, H, L, hd}), {0, 2, 1, 3}), {N, L, H * hd});
}

// Packed self-attention projection (N, L, 3E) -> q, k, v, each (N·H, L, hd), in one copy.
std::array<Tensor, 3> split_qkv(const Tensor& qkv, int64_t H) {
  const int64_t N = qkv.size(0), L = qkv.size(1), E = qkv.size(2) / 3;
  // (N, L, 3, H, hd) -> (3, N, H, L, hd) -> (3, N·H, L, hd)
  Tensor t = reshape(permute(reshape(qkv, {N, L, 3, H, E / H}), {2, 0, 3, 1, 4}), {3, N * H, L, E / H});
  return {squeeze(narrow(t, 0, 0, 1), 0), squeeze(narrow(t, 0, 1, 1), 0), squeeze(narrow(t, 0, 2, 1), 0)};
}

// Rows i·E .. (i+1)·E of the packed in_proj: the q (0), k (1) or v (2) projection.
Tensor in_proj_rows(const Tensor& t, int64_t i, int64_t E) { return t.defined() ? narrow(t, 0, i * E, E) : Tensor(); }

// forward's checks of query, key, value and the value mix, in the order they report (each error
// names what it got); canon puts a tensor batch first.
template <class Canon>
void check_inputs(const Tensor& query, const Tensor& key, const Tensor& value, const ValueMix& value_mix, int64_t E,
                  bool batch_first, DType dtype, Canon canon) {
  const char* op = "MultiheadAttention";
  for (const Tensor* t : {&query, &key, &value}) {
    if (!t->defined()) throw std::invalid_argument(std::string(op) + ": query, key and value are required");
    if (t->dtype() != dtype)
      throw std::invalid_argument(std::string(op) + ": input " + describe(*t) + " does not match the parameters' dtype " +
                                  dtype_name(dtype));
  }
  const bool unbatched = query.dim() == 2;
  if (query.dim() != 2 && query.dim() != 3)
    throw std::invalid_argument(std::string(op) + ": query must be 2-d (L, E) or 3-d, got " + describe(query));
  if (key.dim() != query.dim() || value.dim() != query.dim())
    throw std::invalid_argument(std::string(op) + ": query, key and value must have the same rank, got " +
                                describe(query) + ", " + describe(key) + ", " + describe(value));
  const Tensor& e = value_mix.embedding;
  if (e.defined() && (e.shape() != value.shape() || e.dtype() != value.dtype()))
    throw std::invalid_argument(std::string(op) + ": the value mix's embedding " + describe(e) +
                                " must be shaped and typed as value " + describe(value));
  const Tensor q_in = canon(query), k_in = canon(key), v_in = canon(value);
  const int64_t N = q_in.size(0), S = k_in.size(1);
  const std::string layout = unbatched ? "(L, E)" : (batch_first ? "(N, L, E)" : "(L, N, E)");
  if (q_in.size(2) != E)
    throw std::invalid_argument(std::string(op) + ": query " + describe(query) + " must be " + layout + " with E = " +
                                std::to_string(E));
  if (k_in.size(0) != N || k_in.size(2) != E || v_in.size(0) != N || v_in.size(1) != S || v_in.size(2) != E)
    throw std::invalid_argument(std::string(op) + ": key " + describe(key) + " and value " + describe(value) +
                                " must both be " + (unbatched ? "(S, E)" : batch_first ? "(N, S, E)" : "(S, N, E)") +
                                " with N = " + std::to_string(N) + ", E = " + std::to_string(E));
}

// key_padding_mask checked against (N, S); an unbatched call's (S) gets its batch dim.
Tensor checked_padding_mask(const Tensor& key_padding_mask, bool unbatched, int64_t N, int64_t S, DType dtype) {
  const char* op = "MultiheadAttention";
  Tensor kpm = key_padding_mask;
  if (!kpm.defined()) return kpm;
  if (unbatched && kpm.dim() == 1) kpm = unsqueeze(kpm, 0);
  if (kpm.dim() != 2 || kpm.size(0) != N || kpm.size(1) != S)
    throw std::invalid_argument(std::string(op) + ": key_padding_mask must have shape (N, S) = " + dims({N, S}) +
                                ", got " + describe(key_padding_mask));
  if (kpm.dtype() != DType::Bool && kpm.dtype() != dtype)
    throw std::invalid_argument(std::string(op) + ": key_padding_mask must be bool or " + dtype_name(dtype) + ", got " +
                                describe(key_padding_mask));
  return kpm;
}

// attn_mask checked against (L, S) and (N·H, L, S).
void check_attn_mask(const Tensor& attn_mask, int64_t N, int64_t H, int64_t L, int64_t S, DType dtype) {
  const char* op = "MultiheadAttention";
  if (!attn_mask.defined()) return;
  const bool ok2 = attn_mask.dim() == 2 && attn_mask.size(0) == L && attn_mask.size(1) == S;
  const bool ok3 = attn_mask.dim() == 3 && attn_mask.size(0) == N * H && attn_mask.size(1) == L && attn_mask.size(2) == S;
  if (!ok2 && !ok3)
    throw std::invalid_argument(std::string(op) + ": attn_mask must have shape (L, S) = " + dims({L, S}) +
                                " or (N·num_heads, L, S) = " + dims({N * H, L, S}) + ", got " + describe(attn_mask));
  if (attn_mask.dtype() != DType::Bool && attn_mask.dtype() != dtype)
    throw std::invalid_argument(std::string(op) + ": attn_mask must be bool or " + dtype_name(dtype) + ", got " +
                                describe(attn_mask));
}

// Folds attn_mask and key_padding_mask into one additive float mask in `dtype`:
// (L, S) when only a 2-d attn_mask is given, else (N·H, L, S). Undefined when there is none.
// Bool masks and float masks that do not require grad are folded in one loop; a float mask
// that requires grad (a learned bias) is added with ops, so its gradient flows.
Tensor combine_masks(const Tensor& attn_mask_in, const Tensor& kpm_in, int64_t N, int64_t H, int64_t L, int64_t S,
                     DType dtype) {
  if (!attn_mask_in.defined() && !kpm_in.defined()) return Tensor();
  const bool per_batch = kpm_in.defined() || attn_mask_in.dim() == 3;
  const bool am_grad = attn_mask_in.defined() && attn_mask_in.requires_grad() && GradMode::enabled();
  const bool kpm_grad = kpm_in.defined() && kpm_in.requires_grad() && GradMode::enabled();
  const Tensor attn_mask = am_grad ? Tensor() : attn_mask_in, kpm = kpm_grad ? Tensor() : kpm_in;
  Tensor m = per_batch ? Tensor::zeros({N * H, L, S}, dtype) : Tensor::zeros({L, S}, dtype);
  AG_DISPATCH_FLOAT(dtype, "MultiheadAttention", [&] {
    scalar_t* pm = m.data<scalar_t>();
    const scalar_t ninf = -std::numeric_limits<scalar_t>::infinity();
    if (attn_mask.defined()) {
      const auto am = attn_mask.to_double_vector();  // (L, S) or (N·H, L, S)
      const bool is_bool = attn_mask.dtype() == DType::Bool;
      const int64_t reps = per_batch ? N * H : 1, block = L * S;
      const bool am3 = attn_mask.dim() == 3;
      for (int64_t r = 0; r < reps; ++r)
        for (int64_t i = 0; i < block; ++i) {
          const double v = am[(am3 ? r * block : 0) + i];
          pm[r * block + i] += is_bool ? (v != 0 ? ninf : scalar_t(0)) : static_cast<scalar_t>(v);
        }
    }
    if (kpm.defined()) {
      const auto kp = kpm.to_double_vector();  // (N, S)
      const bool is_bool = kpm.dtype() == DType::Bool;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t j = 0; j < S; ++j) {
              const double v = kp[n * S + j];
              pm[((n * H + h) * L + i) * S + j] += is_bool ? (v != 0 ? ninf : scalar_t(0)) : static_cast<scalar_t>(v);
            }
    }
  });
  if (am_grad) m = add(m, attn_mask_in);  // (L, S) broadcasts over N·H; its gradient is summed back
  if (kpm_grad)  // (N, S) -> (N, H, L, S) -> (N·H, L, S)
    m = add(m, reshape(expand(reshape(kpm_in, {N, 1, 1, S}), {N, H, L, S}), {N * H, L, S}));
  return m;
}

// For AttentionOptions::fully_masked_rows = NaN: a factor (rows, L, 1) that is NaN for a query
// whose keys are all hidden (by the additive mask's −inf, or by causality) and 1 elsewhere;
// undefined when no query is. P times it is torch's: NaN rows, whose NaN reaches the output row
// and, in backward, the gradients, as torch's do.
Tensor nan_for_fully_masked(const Tensor& mask, bool is_causal, int64_t L, int64_t S, DType dtype) {
  const int64_t rows = mask.defined() && mask.dim() == 3 ? mask.size(0) : 1;
  const std::vector<double> m = mask.defined() ? mask.to_double_vector() : std::vector<double>();
  std::vector<double> factor(static_cast<size_t>(rows * L), 1.0);
  bool any = false;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < L; ++i) {
      bool hidden = true;
      for (int64_t j = 0; j < S && hidden; ++j) {
        const bool causal_hidden = is_causal && j > i;
        const bool mask_hidden = !m.empty() && m[static_cast<size_t>((r * L + i) * S + j)] == -std::numeric_limits<double>::infinity();
        hidden = causal_hidden || mask_hidden;
      }
      if (hidden && S > 0) factor[static_cast<size_t>(r * L + i)] = std::numeric_limits<double>::quiet_NaN(), any = true;
    }
  return any ? Tensor::from_vector(factor, {rows, L, 1}, dtype) : Tensor();
}

thread_local bool g_unfused = false;

}  // namespace

UnfusedAttentionGuard::UnfusedAttentionGuard() : prev_(g_unfused) { g_unfused = true; }
UnfusedAttentionGuard::~UnfusedAttentionGuard() { g_unfused = prev_; }
bool UnfusedAttentionGuard::active() { return g_unfused; }

MultiheadAttention::MultiheadAttention(int64_t E, int64_t H, double p, bool bias, bool bf, DType dtype, Generator& gen,
                                       AttentionOptions opts)
    : embed_dim(E), num_heads(H), head_dim(H > 0 ? E / H : 0), dropout(p), batch_first(bf), options(opts), gen_(&gen) {
  if (E <= 0 || H <= 0) throw std::invalid_argument("MultiheadAttention: embed_dim and num_heads must be positive");
  if (E % H != 0)
    throw std::invalid_argument("MultiheadAttention: embed_dim (" + std::to_string(E) + ") must be divisible by num_heads (" +
                                std::to_string(H) + ")");
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("MultiheadAttention: dropout must be in [0, 1]");
  if (opts.rope && head_dim % 2 != 0)
    throw std::invalid_argument("MultiheadAttention: rope needs an even head_dim, got " + std::to_string(head_dim));
  // torch's init, in torch's order: out_proj a Linear (its own init drawn as it is made), then
  // Xavier-uniform in_proj_weight, U(±√(6 / (fan_in + fan_out))), and zero biases. (The
  // parameters are listed in_proj first all the same: a module's own before its children's.)
  const char* what = "MultiheadAttention's in_proj_weight";
  const int64_t E3 = checked::mul(3, E, what);
  checked::add(E, E3, what);  // fan_in + fan_out
  out_proj = register_module("out_proj", std::make_shared<Linear>(E, E, bias, dtype, gen));
  const Init xavier = Init::uniform(init::xavier_uniform_bound(E, E3));
  in_proj_weight = register_parameter("in_proj_weight", {{E3, E}, xavier, OptimGroup::Matrix, 1}, dtype, gen);
  if (bias) in_proj_bias = register_parameter("in_proj_bias", {{E3}, Init::zeros(), OptimGroup::NoDecay, 0}, dtype, gen);
  if (bias) out_proj->set_init("bias", Init::zeros(), gen);
}

MultiheadAttention::Output MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const Tensor& key_padding_mask, bool need_weights,
                                                       const Tensor& attn_mask, bool average_attn_weights,
                                                       bool is_causal, const ValueMix& value_mix) const {
  // ---- the inputs, batch first: query (N, L, E), key and value (N, S, E) -------------------------
  auto canon = [&](const Tensor& t) { return query.dim() == 2 ? unsqueeze(t, 0) : (batch_first ? t : transpose(t, 0, 1)); };
  check_inputs(query, key, value, value_mix, embed_dim, batch_first, in_proj_weight.dtype(), canon);
  const bool unbatched = query.dim() == 2;  // (L, E)
  const Tensor q_in = canon(query), k_in = canon(key), v_in = canon(value);
  ValueMix mix = value_mix;  // its embedding in the values' layout
  if (mix.embedding.defined()) mix.embedding = canon(mix.embedding);
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  // ---- the masks, as one additive mask: (L, S), (N·H, L, S) or none -------------------------------
  const Tensor kpm = checked_padding_mask(key_padding_mask, unbatched, N, S, query.dtype());
  check_attn_mask(attn_mask, N, num_heads, L, S, query.dtype());
  const Tensor mask = combine_masks(attn_mask, kpm, N, num_heads, L, S, query.dtype());

  // ---- attention: context = softmax(q·kᵀ/√hd + mask)·v, by the kernel chosen for this call ---
  const AttentionCall call{q_in, k_in, v_in, mix, mask, N, L, S, 1.0 / std::sqrt(static_cast<double>(head_dim)),
                           query.same(key) && key.same(value), is_causal, need_weights};
  Tensor ctx, weights;  // ctx (N, L, E); weights (N, H, L, S) when asked for
  switch (kernel_for(call)) {
    case AttentionKernel::PackedFlash: ctx = attend_packed(call); break;
    case AttentionKernel::StridedFlash: ctx = attend_strided(call); break;
    case AttentionKernel::Probabilities: std::tie(ctx, weights) = attend_materialised(call, /*unfused=*/false); break;
    case AttentionKernel::Unfused: std::tie(ctx, weights) = attend_materialised(call, /*unfused=*/true); break;
  }
  const Tensor out = out_proj->forward(ctx);  // (N, L, E)

  // ---- in the caller's layout ------------------------------------------------------------------
  Output res;
  res.output = unbatched ? squeeze(out, 0) : (batch_first ? out : transpose(out, 0, 1).contiguous());
  if (need_weights) {
    Tensor w = weights;
    if (average_attn_weights) w = mean(w, {1});  // (N, L, S)
    res.weights = unbatched ? squeeze(w, 0) : w;
  }
  return res;
}

// The one place the kernel is chosen. Flash attention (kernels/flash.h) is the fastest and
// needs O(L + S) memory per head: it never forms the (L, S) matrix P, forward or backward. So it
// cannot return P (need_weights), drop parts of it out (attention dropout in training) or add an
// arbitrary mask to the scores (it knows the causal rule only): each of those materialises P with
// the fused attention_probs kernel. Self-attention whose q and k are used as projected (no qk_norm,
// no rope) reads its heads in place from the packed q|k|v projection, without the copies that
// split and merge them. UnfusedAttentionGuard (the study tools) asks for the primitive ops.
MultiheadAttention::AttentionKernel MultiheadAttention::kernel_for(const AttentionCall& c) const {
  if (g_unfused) return AttentionKernel::Unfused;
  if (c.need_weights || c.mask.defined() || (dropout > 0 && is_training())) return AttentionKernel::Probabilities;
  if (c.self_attention && !transforms_qk()) return AttentionKernel::PackedFlash;
  return AttentionKernel::StridedFlash;
}

Tensor MultiheadAttention::attend_packed(const AttentionCall& c) const {
  const Tensor qkv = mix_packed_values(linear(c.q, in_proj_weight, in_proj_bias), c.mix);  // (N, L, 3E)
  return self_attention_qkv(qkv, num_heads, c.is_causal, c.scale);                         // -> (N, L, E)
}

Tensor MultiheadAttention::attend_strided(const AttentionCall& c) const {
  const int64_t E = embed_dim, N = c.N;
  auto as_heads = [&](const Tensor& y) {  // (N, L, E) -> (N, H, L, hd), a view
    return permute(reshape(y, {N, y.size(1), num_heads, head_dim}), {0, 2, 1, 3});
  };
  Tensor q, k, v;
  if (c.self_attention) {  // one GEMM for q, k and v: (N, L, 3E), then views
    const Tensor qkv = linear(c.q, in_proj_weight, in_proj_bias);
    q = as_heads(narrow(qkv, 2, 0, E)), k = as_heads(narrow(qkv, 2, E, E));
    v = as_heads(mix_values(narrow(qkv, 2, 2 * E, E), c.mix));
  } else {
    q = as_heads(linear(c.q, in_proj_rows(in_proj_weight, 0, E), in_proj_rows(in_proj_bias, 0, E)));
    k = as_heads(linear(c.k, in_proj_rows(in_proj_weight, 1, E), in_proj_rows(in_proj_bias, 1, E)));
    v = as_heads(mix_values(linear(c.v, in_proj_rows(in_proj_weight, 2, E), in_proj_rows(in_proj_bias, 2, E)), c.mix));
  }
  const Tensor o = scaled_dot_product_attention(position_heads(q, 0), position_heads(k, 0), v, c.is_causal, c.scale);
  return reshape(permute(o, {0, 2, 1, 3}), {N, c.L, E});  // (N, H, L, hd) -> (N, L, E)
}

std::pair<Tensor, Tensor> MultiheadAttention::attend_materialised(const AttentionCall& c, bool unfused) const {
  const int64_t E = embed_dim, H = num_heads, N = c.N, L = c.L, S = c.S;
  // ---- projections: self-attention packs q, k, v into one GEMM ------------------------------
  Tensor q, k, v;  // (N·H, L|S, hd)
  if (c.self_attention) {
    const auto qkv = split_qkv(mix_packed_values(linear(c.q, in_proj_weight, in_proj_bias), c.mix), H);  // (N, L, 3E)
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = split_heads(linear(c.q, in_proj_rows(in_proj_weight, 0, E), in_proj_rows(in_proj_bias, 0, E)), H);
    k = split_heads(linear(c.k, in_proj_rows(in_proj_weight, 1, E), in_proj_rows(in_proj_bias, 1, E)), H);
    v = split_heads(mix_values(linear(c.v, in_proj_rows(in_proj_weight, 2, E), in_proj_rows(in_proj_bias, 2, E)), c.mix), H);
  }
  q = position_heads(q, 0), k = position_heads(k, 0);
  // P = softmax(q·kᵀ/√hd + mask) (N·H, L, S), materialised
  Tensor P = unfused ? attention_probs_unfused(q, k, c.mask, c.scale, c.is_causal)
                     : attention_probs(q, k, c.mask, c.scale, c.is_causal);
  if (options.fully_masked_rows == FullyMaskedRows::NaN && (c.mask.defined() || c.is_causal))
    if (const Tensor nan_rows = nan_for_fully_masked(c.mask, c.is_causal, L, S, P.dtype()); nan_rows.defined())
      P = mul(P, nan_rows);  // (N·H | 1, L, 1) broadcasts over P (N·H, L, S)
  P = ag::dropout(P, dropout, is_training(), *gen_);
  Tensor weights;
  if (c.need_weights) {  // the context is computed from the very tensor returned, so that its
    weights = reshape(P, {N, H, L, S});  // gradient is dLoss/dweights (retain_grad, hooks, ag::grad)
    P = reshape(weights, {N * H, L, S});
  }
  return {merge_heads(matmul(P, v), N, H), weights};  // (N, L, E)
}

Tensor MultiheadAttention::forward_cached(const Tensor& x, KVCache& cache, int64_t capacity,
                                          const ValueMix& value_mix) const {
  const int64_t E = embed_dim, H = num_heads, hd = head_dim;
  if (x.dim() != 3 || x.size(2) != E)
    throw std::invalid_argument("MultiheadAttention::forward_cached: x must be (N, T, E) with E = " + std::to_string(E) +
                                ", got " + describe(x));
  const int64_t N = x.size(0), T = x.size(1);
  if (!cache.k.defined() || cache.k.size(0) != N * H || cache.k.dtype() != x.dtype() || cache.k.size(1) != capacity) {
    cache.k = Tensor::zeros({N * H, capacity, hd}, x.dtype());
    cache.v = Tensor::zeros({N * H, capacity, hd}, x.dtype());
    cache.len = 0;
  }
  if (cache.len + T > capacity)
    throw std::invalid_argument("MultiheadAttention::forward_cached: " + std::to_string(cache.len + T) +
                                " positions exceed the cache capacity " + std::to_string(capacity));
  if (value_mix.embedding.defined() && (value_mix.embedding.shape() != x.shape() || value_mix.embedding.dtype() != x.dtype()))
    throw std::invalid_argument("MultiheadAttention::forward_cached: the value mix's embedding " +
                                describe(value_mix.embedding) + " must be shaped and typed as x " + describe(x));
  auto qkv = split_qkv(mix_packed_values(linear(x, in_proj_weight, in_proj_bias), value_mix), H);  // each (N·H, T, hd)
  qkv[0] = position_heads(qkv[0], cache.len), qkv[1] = position_heads(qkv[1], cache.len);  // new positions len..
  // Append this step's keys and values: cache[:, len : len+T, :] = k, v
  const size_t row_bytes = static_cast<size_t>(T * hd) * dtype_size(x.dtype());
  for (int i = 1; i <= 2; ++i) {
    const Tensor src = qkv[i].contiguous();
    Tensor& dst = i == 1 ? cache.k : cache.v;
    for (int64_t b = 0; b < N * H; ++b)
      std::memcpy(static_cast<char*>(dst.raw_data()) + (b * capacity + cache.len) * hd * dtype_size(x.dtype()),
                  static_cast<const char*>(src.raw_data()) + b * row_bytes, row_bytes);
  }
  const int64_t S = cache.len + T;
  const Tensor K = narrow(cache.k, 1, 0, S), V = narrow(cache.v, 1, 0, S);  // (N·H, S, hd)
  // New query t sits at position len + t: it sees keys 0 .. len + t.
  const Tensor P = attention_probs(qkv[0], K, Tensor(), 1.0 / std::sqrt(static_cast<double>(hd)), true, cache.len);
  cache.len = S;
  return out_proj->forward(merge_heads(matmul(P, V), N, H));  // (N, T, E)
}

Tensor MultiheadAttention::mix_values(const Tensor& v, const ValueMix& value_mix) {
  if (!value_mix.embedding.defined()) return v;
  const Tensor& l = value_mix.lambdas;
  if (!l.defined() || l.shape() != Shape{2} || l.dtype() != v.dtype())
    throw std::invalid_argument("MultiheadAttention: the value mix's lambdas must be (2) " + std::string(dtype_name(v.dtype())) +
                                ", got " + describe(l));
  return add(mul(v, select(l, 0, 0)), mul(value_mix.embedding, select(l, 0, 1)));  // (N, S, E) · 0-d each
}

Tensor MultiheadAttention::mix_packed_values(const Tensor& qkv, const ValueMix& value_mix) {
  if (!value_mix.embedding.defined()) return qkv;
  const int64_t E = qkv.size(2) / 3;  // [q | k | v] along the last dim
  return concat({narrow(qkv, 2, 0, 2 * E), mix_values(narrow(qkv, 2, 2 * E, E), value_mix)}, 2);
}

Tensor MultiheadAttention::position_heads(const Tensor& t, int64_t offset) const {
  Tensor r = t;
  if (options.qk_norm) r = rms_norm(r, Tensor(), options.qk_norm_eps);  // per head: over hd
  if (options.rope) r = rope(r, offset, options.rope_base);
  return r;
}

}  // namespace ag::nn
