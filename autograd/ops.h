// Every differentiable op of attograd. Each is implemented in autograd/ops/*.cpp with its
// forward and its backward side by side. Ops check their inputs and throw
// std::invalid_argument naming the op, the shapes and the dtypes.
//
// Dims may be negative (counted from the end), as in PyTorch.
#pragma once
#include <optional>
#include <utility>
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
// a ** b with both a tensor (broadcast together), differentiable in both: da = g·b·a^(b−1)
// (0 where b = 0), db = g·a^b·log(a) (0 where a = 0 and b ≥ 0), as PyTorch's pow.
Tensor pow(const Tensor& a, const Tensor& b);
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

// ---- trigonometric (autograd/ops/trig.cpp) ----------------------------------------------------
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);

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
// broadcasting). Returns g itself when the shapes already match. Backward functions do not call
// it: they return a broadcast input's gradient in the broadcast shape, and the engine reduces it
// (engine.cpp), as PyTorch's validate_outputs does.
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
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim = false);  // int64 indices; no gradient
// The k largest (largest = true) or smallest elements along dim with their int64 positions,
// as torch.topk: sorted from the most extreme; NaN counts as larger than any number. Equal
// values, and the order with sorted = false, come out as torch's CPU kernel leaves them (its
// selection algorithm, run on the same sequence). Any dtype. The gradient of the values goes
// to the picked positions (autograd/ops/topk.cpp).
std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
// Largest/smallest value over dims (empty: all), as torch.amax/amin (NaN wins). Elements that
// tie for the extreme share its gradient equally, as in PyTorch.
Tensor amax(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// The p-norm over dims (empty: all elements), as torch.norm; only p = 2 (other p throw). The
// gradient is a/‖a‖, and 0 where ‖a‖ = 0, as in PyTorch.
Tensor norm(const Tensor& a, double p = 2.0, const std::vector<int64_t>& dims = {}, bool keepdim = false);

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
// One dim may be -1. Always contiguous (the kernels that read raw data rely on it): a view
// when a is contiguous, else a copy (which is no view of anything).
Tensor reshape(const Tensor& a, const Shape& shape);
// A view of a's elements in a's row-major order with the new shape, whenever strides exist
// for it (ATen's computeStride rule: a's dims fall into runs each laid out as one contiguous
// block, and the new shape must split into runs of the same sizes; so a split, a narrow or a
// transpose can be viewed where the merged dims stay within one run). Throws torch's
// message otherwise. The view may not be contiguous.
Tensor view(const Tensor& a, const Shape& shape);
// torch's reshape: view() when it can make one, whatever a's layout, else reshape()'s copy.
Tensor view_or_copy(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);  // view
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);  // view
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);  // view
Tensor unsqueeze(const Tensor& a, int64_t dim);  // view
// Indexing views (autograd/ops/strided.cpp). select: a[i] along dim, the dim removed (i may be
// negative). slice: a[start:end:step] along dim with Python's bounds (negative from the end,
// clamped; absent = the whole dim); step > 0.
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1);
// The region of a with the given shape, strides and offset, counted in the elements of a laid
// out contiguously (a view when a is contiguous), and its backward: zeros of base_shape with src
// in that region. Each is the other's backward (any order).
Tensor as_strided(const Tensor& a, const Shape& shape, const Shape& strides, int64_t offset);
Tensor as_strided_scatter(const Tensor& src, const Shape& base_shape, const Shape& shape, const Shape& strides,
                          int64_t offset);
Tensor squeeze(const Tensor& a, int64_t dim);    // view; dim must have size 1
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim);
// Equal-shaped tensors joined along a new dim (in [−(rank+1), rank]).
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim);  // views
Tensor expand(const Tensor& a, const Shape& shape);  // broadcast copy (backward sums)
Tensor flip(const Tensor& a, const std::vector<int64_t>& dims);  // a copy, reversed along dims
// `chunks` views of equal size ceil(n / chunks) along dim, the last smaller (so maybe fewer
// than `chunks` of them), as torch.chunk.
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);  // views a.select(dim, i), dim removed

// ---- comparisons (autograd/ops/compare.cpp) ------------------------------------------------------
// Element-wise, with broadcasting, as torch.eq/ne/lt/le/gt/ge: bool tensors, which never require
// grad. Tensors of different dtypes are compared as float64; a scalar is compared in a float
// tensor's own dtype (as PyTorch casts it), with an int64 tensor exactly when it is a whole number.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double s);
Tensor ne(const Tensor& a, double s);
Tensor lt(const Tensor& a, double s);
Tensor le(const Tensor& a, double s);
Tensor gt(const Tensor& a, double s);
Tensor ge(const Tensor& a, double s);

// torch.equal: the same shape and every element equal (any dtypes, compared as float64).
// torch.allclose: shapes that broadcast, and |a − b| ≤ atol + rtol·|b| everywhere (a NaN is
// close to a NaN only with equal_nan; infinities only to themselves).
bool equal(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);

inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& a, double s) { return eq(a, s); }
inline Tensor operator!=(const Tensor& a, double s) { return ne(a, s); }
inline Tensor operator<(const Tensor& a, double s) { return lt(a, s); }
inline Tensor operator<=(const Tensor& a, double s) { return le(a, s); }
inline Tensor operator>(const Tensor& a, double s) { return gt(a, s); }
inline Tensor operator>=(const Tensor& a, double s) { return ge(a, s); }
inline Tensor operator==(double s, const Tensor& a) { return eq(a, s); }
inline Tensor operator!=(double s, const Tensor& a) { return ne(a, s); }
inline Tensor operator<(double s, const Tensor& a) { return gt(a, s); }
inline Tensor operator<=(double s, const Tensor& a) { return ge(a, s); }
inline Tensor operator>(double s, const Tensor& a) { return lt(a, s); }
inline Tensor operator>=(double s, const Tensor& a) { return le(a, s); }

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
// Normalises over the last dim; weight and bias are (C) or undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// torch.nn.functional.layer_norm: over the trailing dims normalized_shape; weight and bias of
// that shape, or undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p). Identity when
// !training or p == 0.
Tensor dropout(const Tensor& a, double p, bool training, Generator& gen = default_generator());

// ---- parts of modern transformers (autograd/ops/rms_norm.cpp, rope.cpp, softcap.cpp) ----------
// RMSNorm over the last dim, as torch.nn.functional.rms_norm: x / √(mean(x²) + eps) ⊙ weight;
// weight (C) or undefined; eps by default the machine epsilon of x's dtype, as torch's.
Tensor rms_norm(const Tensor& x, const Tensor& weight = Tensor(), std::optional<double> eps = std::nullopt);
// Rotary position embeddings for x (..., T, D), D even, row t at position offset + t (offset:
// the positions already in a KV cache). The half-split layout of GPT-NeoX and LLaMA: the pair
// (x[i], x[i + D/2]) turns by the angle θ = position · base^(−2i/D),
//   y[i] = x[i]·cos θ − x[i + D/2]·sin θ,  y[i + D/2] = x[i + D/2]·cos θ + x[i]·sin θ.
// inverse turns by −θ instead (rope's own backward).
Tensor rope(const Tensor& x, int64_t offset = 0, double base = 10000.0, bool inverse = false);
// Logit soft-capping (Gemma 2, modded-nanogpt): cap · tanh(x / cap), smooth and within (−cap, cap).
Tensor softcap(const Tensor& x, double cap);

// ---- losses (autograd/ops/loss.cpp) ------------------------------------------------------------------
// torch.nn.functional's losses, with its options: plain structs for designated initializers,
// fields named and ordered as torch's keyword arguments, torch's defaults, e.g.
//   cross_entropy(logits, targets, {.ignore_index = 0, .reduction = kSum, .label_smoothing = 0.1})
// nn/functional.h exports them as ag::nn::functional::*, as libtorch's torch::nn::functional.
// Being made of ops, they also differentiate the weights (torch computes no gradient for those).
enum class Reduction { None, Mean, Sum };  // torch's reduction='none' | 'mean' | 'sum'
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;

struct MSELossFuncOptions {
  Reduction reduction = kMean;
};
struct L1LossFuncOptions {
  Reduction reduction = kMean;
};
struct BinaryCrossEntropyFuncOptions {
  Tensor weight = {};  // broadcast to the input
  Reduction reduction = kMean;
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  Tensor weight = {};  // broadcast to the input
  Reduction reduction = kMean;
  Tensor pos_weight = {};  // weight of the positive term, broadcast along the last dim
};
struct NLLLossFuncOptions {
  Tensor weight = {};  // (C) per-class weights
  int64_t ignore_index = -100;
  Reduction reduction = kMean;
};
struct CrossEntropyFuncOptions {
  Tensor weight = {};  // (C) per-class weights
  int64_t ignore_index = -100;
  Reduction reduction = kMean;
  double label_smoothing = 0.0;  // in [0, 1]
};

// (input − target)² and |input − target|, broadcast together; the mean of an empty input is nan.
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
// −w·[t·log x + (1 − t)·log(1 − x)] for probabilities x in [0, 1], each log clamped at −100,
// as torch's; target in [0, 1], of the input's shape once both have their size-1 dims squeezed
// out, as ATen's (an (N, 1) input takes an (N) target; the loss has the input's shape;
// nn::functional's asks for equal shapes), differentiated too: −w·logit(x). The
// gradient of x is w·(x − t) / max(x·(1 − x), ε), torch's formula with its ε = float(1e-12),
// written with ops (so it has a second derivative).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options = {});
// −w·[p·t·log σ(x) + (1 − t)·log(1 − σ(x))] (p = pos_weight), computed without overflow;
// target (a float tensor, also differentiated) has the input's shape.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
// −w[t]·input[t] for log-probabilities input (N, C), (C) or (N, C, d1, ...) and int64 class
// indices target (N), () or (N, d1, ...). Targets equal to ignore_index add nothing; kMean
// divides by the summed weight of the others, so an all-ignored batch gives nan, as PyTorch.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
// nll_loss(log_softmax(input, 1)) mixed with label smoothing: (1 − ε)·nll + ε·mean_c(−log p_c)
// for class indices; or, for a float target shaped like the input (class probabilities),
// −Σ_c w_c·y_c·log p_c. Without weights it is one fused node (a float32 kernel for the
// training loss, whose backward is an op of its own: differentiable to any order).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});

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

// ---- backward ops (PyTorch's *_backward) -------------------------------------------------------
// A backward pass's fused kernel as an op of its own. The forward op's backward function calls it:
// without create_graph it just runs the kernel; under create_graph it records itself, and its own
// backward, written with ops beside it, makes the gradient differentiable again. So each
// derivative is written once. (The multi-output fused ops, gelu_mlp, layer_norm and the attention
// kernels, get theirs from their definitions instead: autograd/ops/fused_backward.h.)
// grad ⊙ (1 − output²), for output = tanh(x) (autograd/ops/elementwise.cpp)
Tensor tanh_backward(const Tensor& grad, const Tensor& output);
// grad where self > threshold, else 0: relu's backward with threshold 0 (elementwise.cpp)
Tensor threshold_backward(const Tensor& grad, const Tensor& self, double threshold);
// grad ⊙ gelu'(self), exact or tanh form (elementwise.cpp)
Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool approximate = false);
// output ⊙ (grad − Σ grad ⊙ output) over dim, for output = softmax(x, dim) (nn_functional.cpp)
Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim = -1);
// grad − exp(output) · Σ grad over dim, for output = log_softmax(x, dim) (nn_functional.cpp)
Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim = -1);
// Zeros of input_shape with grad at [start, end) along dim: narrow's backward (shape.cpp)
Tensor slice_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, int64_t start, int64_t end);

}  // namespace ag
