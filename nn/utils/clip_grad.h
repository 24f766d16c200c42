// Gradient clipping, as torch.nn.utils (libtorch's torch::nn::utils).
//
//   double norm = nn::utils::clip_grad_norm_(model.parameters(), 1.0);
//   nn::utils::clip_grad_value_(model.parameters(), 0.5);
//
// Parameters without a .grad are skipped. The gradients are scaled or clamped in place: a
// .grad a caller holds sees the change.
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace ag::nn::utils {

// Scales all gradients by min(1, max_norm / (total_norm + 1e-6)) and returns total_norm,
// measured before the scaling (0 when no parameter has a gradient). As torch's, total_norm is
// the norm_type-norm of the gradients' own norm_type-norms: for p > 0 or p < 0 (Σ|g|^p)^(1/p)
// (a negative p is dominated by the smallest entries, a zero one making it 0), for ±infinity
// the largest or smallest |g|, and for 0 the number of gradients that have a non-zero entry
// (the 0-"norm" of the per-gradient counts of non-zero entries). A non-finite total norm scales
// every gradient to NaN, as torch, or with error_if_nonfinite throws torch's message, changing
// nothing. The 2-norm of float32 gradients runs in parallel and gives the same bits on any
// thread count.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value] (NaN stays NaN).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace ag::nn::utils
