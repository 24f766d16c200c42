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

// Scales all gradients by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
// norm_type-norm (2, any p > 0, or infinity) of all gradients together, and returns total_norm,
// measured before the scaling (0 when no parameter has a gradient). A non-finite total norm
// scales every gradient to NaN, as torch, or with error_if_nonfinite throws torch's message.
// The 2-norm of float32 gradients runs in parallel and gives the same bits on any thread count.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value] (NaN stays NaN).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ag::nn::utils
