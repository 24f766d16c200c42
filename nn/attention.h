// MultiheadAttention with the semantics of torch.nn.MultiheadAttention:
//   parameters  in_proj_weight (3E, E) with rows [q; k; v], in_proj_bias (3E),
//               out_proj.weight (E, E), out_proj.bias (E);
//   init        Xavier-uniform in_proj_weight, zero biases, out_proj.weight as Linear;
//   shapes      query (L, N, E), key/value (S, N, E); (N, L, E) with batch_first; or unbatched (L, E);
//   masks       attn_mask bool (true = may NOT attend) or float (added to the scores), (L, S) or
//               (N·H, L, S) with row n·H + h; key_padding_mask bool (N, S), true = ignore that key;
//   weights     averaged over heads (N, L, S), or per head (N, H, L, S).
// Differences, on purpose:
//   * is_causal=true builds the causal mask (key j hidden from query i when j > i). In PyTorch
//     it is only a hint that attn_mask already is causal; here no attn_mask is needed.
//   * A query whose keys are all masked gets zero weights and a zero context, so its output is
//     out_proj.bias, and its gradients are finite. PyTorch returns NaN there.
// Everything runs on the CPU; there are no devices to mismatch, but dtypes must agree.
// Options of recent transformers that torch's module lacks (AttentionOptions, off by default):
//   * qk_norm: q and k normalised per head by RMSNorm without a gain (OLMo 2, modded-nanogpt);
//   * rope: rotary position embeddings on q and k per head (after qk_norm), query and key at
//     positions 0..L−1 and 0..S−1 (forward_cached: after the cached ones).
// And, per call, a ValueMix: the value projection v mixed with an embedding of the same shape
// before attending, v ← λ_v·v + λ_e·e (modded-nanogpt's value embeddings).
#pragma once
#include <memory>
#include <optional>
#include <utility>

#include "nn/linear.h"
#include "nn/module.h"

namespace ag::nn {

// RAII, for study tools (`attograd explore --unfused`): while it lives, MultiheadAttention on
// this thread builds the attention from primitive ops, matmul(q, kᵀ), mul by the scale, the
// mask (add, masked_fill), softmax and matmul(P, v), instead of its fused kernels, so that the
// softmax is a node of its own in the autograd graph. Equal to the fused path up to rounding,
// except that a query whose keys are all masked gets NaN weights here (as in PyTorch).
class UnfusedAttentionGuard {
 public:
  UnfusedAttentionGuard();
  ~UnfusedAttentionGuard();
  UnfusedAttentionGuard(const UnfusedAttentionGuard&) = delete;
  UnfusedAttentionGuard& operator=(const UnfusedAttentionGuard&) = delete;
  static bool active();

 private:
  bool prev_;
};

// Keys and values of one attention layer for incremental decoding, preallocated to capacity.
struct KVCache {
  Tensor k, v;      // (N·H, capacity, head_dim)
  int64_t len = 0;  // positions filled
  void reset() { len = 0; }
};

// What a query whose keys are all masked gets: zero weights and a zero context (attograd's
// default: its output is out_proj.bias and its gradients are finite), or NaN weights, context
// and output row, as torch.nn.MultiheadAttention gives (for code checked against torch's numbers).
enum class FullyMaskedRows { Zeros, NaN };

struct AttentionOptions {
  bool qk_norm = false;
  std::optional<double> qk_norm_eps{};  // unset: the dtype's machine epsilon (rms_norm's default)
  bool rope = false;
  double rope_base = 10000.0;
  FullyMaskedRows fully_masked_rows = FullyMaskedRows::Zeros;
};

// The values a forward attends with, mixed: v ← lambdas[0]·v + lambdas[1]·embedding, v the value
// projection of `value` (N, S, E) before it is split into heads. Undefined embedding: no mix.
struct ValueMix {
  Tensor embedding;  // shaped as `value` (forward_cached: as x); the same dtype
  Tensor lambdas;    // (2): λ_v, λ_e
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false, DType dtype = DType::Float32, Generator& gen = default_generator(),
                     AttentionOptions options = {});

  struct Output {
    Tensor output;   // like query
    Tensor weights;  // (N, L, S) averaged, (N, H, L, S) per head; no N when unbatched; undefined if !need_weights
  };
  Output forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask = Tensor(),
                 bool need_weights = true, const Tensor& attn_mask = Tensor(), bool average_attn_weights = true,
                 bool is_causal = false, const ValueMix& value_mix = {}) const;

  // Causal self-attention over new positions x (N, T, E) (batch-first, whatever batch_first
  // says), attending to everything in `cache` plus themselves. Appends their keys and values
  // to the cache, allocating it with `capacity` positions on first use. For inference.
  Tensor forward_cached(const Tensor& x, KVCache& cache, int64_t capacity, const ValueMix& value_mix = {}) const;

  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  AttentionOptions options;
  Tensor in_proj_weight;  // (3E, E)
  Tensor in_proj_bias;    // (3E), or undefined
  std::shared_ptr<Linear> out_proj;

 private:
  // The kernels that compute the context softmax(q·kᵀ/√hd + mask)·v; kernel_for (attention.cpp)
  // chooses one per call and says why.
  enum class AttentionKernel {
    PackedFlash,    // flash attention on the heads of the packed q|k|v projection, in place
    StridedFlash,   // flash attention on strided (N, H, L, hd) views of the projections
    Probabilities,  // P materialised by the fused attention_probs kernel, then P·v
    Unfused,        // P from primitive ops, each a node (UnfusedAttentionGuard), then P·v
  };
  // One forward call: its inputs in the canonical layout and what it asks for.
  struct AttentionCall {
    Tensor q, k, v;    // (N, L, E), (N, S, E), (N, S, E)
    ValueMix mix;      // its embedding in the values' layout
    Tensor mask;       // additive (L, S) or (N·H, L, S), −inf where hidden; or undefined
    int64_t N, L, S;
    double scale;      // 1/√hd
    bool self_attention, is_causal, need_weights;
  };
  AttentionKernel kernel_for(const AttentionCall& c) const;
  Tensor attend_packed(const AttentionCall& c) const;   // the context (N, L, E)
  Tensor attend_strided(const AttentionCall& c) const;  // the context (N, L, E)
  // The context (N, L, E) and, with need_weights, the weights (N, H, L, S).
  std::pair<Tensor, Tensor> attend_materialised(const AttentionCall& c, bool unfused) const;
  // q or k heads (..., L, hd) at positions offset.. with the options applied: rms_norm, then rope.
  Tensor position_heads(const Tensor& t, int64_t offset) const;
  bool transforms_qk() const { return options.qk_norm || options.rope; }
  // v (N, S, E) mixed as value_mix says (v itself when it says nothing); packed: qkv (N, S, 3E)
  // with its last E columns, the values, mixed.
  static Tensor mix_values(const Tensor& v, const ValueMix& value_mix);
  static Tensor mix_packed_values(const Tensor& qkv, const ValueMix& value_mix);
  Generator* gen_;
};

}  // namespace ag::nn
