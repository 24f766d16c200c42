// The reference's ops beyond matmul (tensor.h): each one's formula, forward and backward, is
// written above its loops in ops.cpp. Shapes in the comments: B batch, T or L query positions,
// S key positions, E width, H heads, d head width, V vocabulary, C any last dim.
#pragma once
#include "reference/tensor.h"

namespace ag::ref {

// ---- element-wise and shapes ---------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);                 // a + b, broadcast together
Tensor scale(const Tensor& a, double s);                      // s·a
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);    // dims d0 and d1 swapped (negative: from the end)
Tensor reshape(const Tensor& a, Shape shape);                 // the same values in another shape
Tensor narrow(const Tensor& a, int64_t start, int64_t size);  // a[..., start : start + size]
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);  // x·wᵀ + b: x (..., in), w (out, in), b (out) or null

// ---- the transformer's ops -----------------------------------------------------------------
Tensor gelu(const Tensor& a);  // x·Φ(x), Φ the normal CDF (with erf: the exact form, not tanh's)
// −∞ where `hidden` (0 or 1, broadcast to a's shape) is 1: a key the query may not see.
Tensor masked_fill(const Tensor& a, const Tensor& hidden);
Tensor softmax(const Tensor& a);  // over the last dim; a row that is all −∞ gives zeros
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps = 1e-5);  // over the last dim
Tensor embedding(const Tensor& ids, const Tensor& table);  // table (V, E)[ids]: ids (...) whole numbers -> (..., E)
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);  // mean of −log softmax(logits)[target]: (N, V), (N)

// Attention of queries q (..., L, d) over keys k (..., S, d) and values v (..., S, dv):
//   scores  = q·kᵀ/√d (+ mask)          (..., L, S)   mask: additive, or null
//   weights = softmax(scores, −∞ where hidden)   hidden: 0/1 broadcast to (..., L, S), or null
//   output  = weights·v                (..., L, dv)
struct Attention {
  Tensor scores, weights, output;
};
Attention attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& hidden = nullptr,
                    const Tensor& mask = nullptr);
// hidden (L, S) = 1 where key j > query i: the causal mask (a query sees itself and the past)
Tensor causal_mask(int64_t L, int64_t S);

}  // namespace ag::ref
