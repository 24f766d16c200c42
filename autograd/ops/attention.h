// attention_probs (autograd/ops.h) spelt out in primitive ops: P = softmax(scale·q·kᵀ + mask),
// causal, from matmul(q, kᵀ), a multiply by the scale, the mask (add, masked_fill) and softmax,
// each a node of its own. It is the fused op's definition, from which its higher derivatives
// come (fused_backward.h), and what the study tools draw when they ask for the softmax as a node
// (nn::UnfusedAttentionGuard). Equal to attention_probs up to rounding, except that a query whose
// keys are all masked gets NaN here (softmax of −∞ only, as in PyTorch) where attention_probs
// gives zeros. The same computation in plain loops, for reading, is reference/ops.cpp's attention.
#pragma once
#include "autograd/tensor.h"

namespace ag {

// q (B, L, D), k (B, S, D), mask undefined or additive (L, S) / (B, L, S) -> P (B, L, S)
Tensor attention_probs_unfused(const Tensor& q, const Tensor& k, const Tensor& mask, double scale, bool causal,
                               int64_t causal_offset = 0);

}  // namespace ag
