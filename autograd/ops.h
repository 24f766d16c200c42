// Every differentiable op of attograd. Each is implemented in autograd/ops/*.cpp with its
// forward and its backward side by side. Ops check their inputs and throw
// std::invalid_argument naming the op, the shapes and the dtypes.
//
// Dims may be negative (counted from the end), as in PyTorch.
#pragma once
#include <optional>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

// ---- element-wise, with NumPy broadcasting (autograd/ops/elementwise.cpp) -------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor rsub(double s, const Tensor& a);  // s - a
Tensor rdiv(double s, const Tensor& a);  // s / a
Tensor pow(const Tensor& a, double exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor relu(const Tensor& a);
// GELU, exact: x * Phi(x) with erf; approximate=true uses the tanh formula.
Tensor gelu(const Tensor& a, bool approximate = false);

// ---- activations (autograd/ops/activation.cpp) ----------------------------------------------
Tensor abs(const Tensor& a);      // gradient sign(a), 0 at a = 0 (as PyTorch)
Tensor sigmoid(const Tensor& a);  // 1 / (1 + exp(−a)), without overflow for large |a|
Tensor silu(const Tensor& a);     // a · sigmoid(a)

// ---- selections, with broadcasting (autograd/ops/select.cpp) --------------------------------
// Where bool `cond` is true a, else b; all three broadcast together. a and b share a dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Element-wise max/min with broadcasting; NaN propagates. On a tie each input gets half the
// gradient, as in PyTorch.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// min(max(a, lo), hi) with either bound optional (hi wins when lo > hi). The gradient passes
// where lo < a < hi; at a bound it is 0, as in PyTorch 2.
Tensor clamp(const Tensor& a, std::optional<double> lo, std::optional<double> hi);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return mul(a, 1.0 / s); }
inline Tensor operator/(double s, const Tensor& a) { return rdiv(s, a); }

// Sums g over the dims that were broadcast to turn `shape` into g's shape (backward of
// broadcasting). Returns g itself when the shapes already match.
Tensor sum_to(const Tensor& g, const Shape& shape);

// ---- reductions (autograd/ops/reduce.cpp) ----------------------------------------------------
Tensor sum(const Tensor& a);  // all elements -> 0-d
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
// Largest/smallest values along dim (NaN wins; on a tie the first). The gradient goes to the
// selected element only, as in PyTorch.
Tensor max(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);  // int64 indices; no gradient

// ---- statistics (autograd/ops/stats.cpp) -----------------------------------------------------
// Variance over dims (empty: all), dividing by max(0, N − correction): correction 1 is
// PyTorch's default (unbiased), 0 the biased (population) variance.
Tensor var(const Tensor& a, const std::vector<int64_t>& dims = {}, double correction = 1.0, bool keepdim = false);
// log Σ exp(a) over dims (empty: all), computed as m + log Σ exp(a − m) with m the max, so it
// neither overflows nor underflows; a slice of −inf gives −inf.
Tensor logsumexp(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);

// ---- matmul on BLAS (autograd/ops/matmul.cpp) ------------------------------------------------
// 2-d (M,K)@(K,N), or batched (...,M,K)@(...,K,N) with broadcast batch dims. A 1-d operand
// follows PyTorch: (K)@(K) is a 0-d dot product, (K)@(...,K,N) -> (...,N) and
// (...,M,K)@(K) -> (...,M) (the vector becomes a matrix, and its dim is removed again).
// Operands whose last two dims are transposed views go to BLAS as-is with the transpose flag,
// without a copy.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x·Wᵀ + b for x (..., in), W (out, in), b (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// y = gelu(x·W1ᵀ + b1)·W2ᵀ + b2 (exact GELU; biases may be undefined): the transformer's MLP
// as one node, equal to that composition; it saves x and the pre-activation only, and
// recomputes the GELU in the backward (autograd/ops/fused_mlp.cpp).
Tensor gelu_mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2);

// ---- shapes and views (autograd/ops/shape.cpp) -------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);  // one dim may be -1; a view when contiguous
Tensor view(const Tensor& a, const Shape& shape);     // like reshape, but throws if a copy is needed
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);  // view
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);  // view
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);  // view
Tensor unsqueeze(const Tensor& a, int64_t dim);  // view
Tensor squeeze(const Tensor& a, int64_t dim);    // view; dim must have size 1
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim);
// Equal-shaped tensors joined along a new dim (in [−(rank+1), rank]).
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim);  // views
Tensor expand(const Tensor& a, const Shape& shape);  // broadcast copy (backward sums)

// ---- lookups and masks (autograd/ops/index.cpp) ------------------------------------------------
// Rows of `a` along `dim` at int64 `index` (1-d); backward scatter-adds.
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
// weight (V, E)[ids] for int64 ids of any shape -> (*ids.shape, E); backward scatter-adds.
Tensor embedding(const Tensor& ids, const Tensor& weight);
// Where bool `mask` (broadcastable to a) is true, the result is `value`; elsewhere a.
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);
// out[i][j][k] = a[i][index[i][j][k]][k] for dim 1 (likewise for any dim): int64 `index` has
// a's rank, out has index's shape, and index.size(d) <= a.size(d) for every d != dim.
// (autograd/ops/select.cpp; backward is scatter_add)
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
// A copy of a with src added at the positions gather reads: out[i][index[i][j][k]][k] +=
// src[i][j][k] for dim 1. src has index's shape. (autograd/ops/select.cpp; backward is gather)
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);

// ---- fused, numerically stable ops (autograd/ops/nn_functional.cpp) ---------------------------
// Over any dim; the last dim runs a fused kernel, any other is moved last and back (views).
Tensor softmax(const Tensor& a, int64_t dim = -1);
Tensor log_softmax(const Tensor& a, int64_t dim = -1);
// Mean cross-entropy of logits (N, C) against int64 targets (N); targets equal to
// ignore_index are skipped (and excluded from the mean).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::optional<int64_t> ignore_index = std::nullopt);
// Normalises over the last dim; weight and bias are (C) or undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p). Identity when
// !training or p == 0.
Tensor dropout(const Tensor& a, double p, bool training, Generator& gen = default_generator());

// ---- attention kernels (autograd/ops/attention.cpp) ---------------------------------------------
// Attention probabilities P = softmax(scale · Q·Kᵀ + mask) for q (B, L, D), k (B, S, D);
// returns (B, L, S). `mask` is undefined, or float additive (B, L, S) / (L, S) where -inf means
// "may not attend". `causal` additionally masks key j for query i when j > i + causal_offset
// (offset 0: PyTorch's top-left causal mask; offset = cached length when decoding with a KV cache).
// A row with no allowed key gets all-zero probabilities (and zero gradient), never NaN.
Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, double scale, bool causal,
                       int64_t causal_offset = 0);

// ---- memory-efficient attention (autograd/ops/sdpa.cpp) -------------------------------------------
// softmax(scale · q·kᵀ + causal mask) · v for q (..., L, D), k (..., S, D), v (..., S, Dv) with
// equal batch dims -> (..., L, Dv): PyTorch's scaled_dot_product_attention without attn_mask and
// dropout (attention_probs takes masks). is_causal hides key j from query i when
// j > i + causal_offset (0: PyTorch's top-left causal mask); scale defaults to 1/√D. Blockwise
// (FlashAttention-2): the (L, S) scores are never stored, forward or backward, so memory is
// O(L + S) per slice. Strided views with contiguous rows are read in place. A query with no
// visible key gets a zero output (and zero gradient), as attention_probs gives.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, int64_t causal_offset = 0);
// Self-attention straight from a packed projection qkv (N, L, 3E) = [q | k | v], each E = H·hd
// wide with head h in columns h·hd .. h·hd + hd: the context (N, L, E), head h in the same
// columns. Equal to scaled_dot_product_attention of the split heads merged back, but reads and
// writes the heads in place: no split or merge copies, forward or backward.
Tensor self_attention_qkv(const Tensor& qkv, int64_t num_heads, bool is_causal = false,
                          std::optional<double> scale = std::nullopt);

}  // namespace ag
