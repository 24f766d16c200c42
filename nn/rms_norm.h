// RMSNorm over the last dim, as torch.nn.RMSNorm: x / √(mean(x²) + eps) ⊙ weight, weight 1 at
// init; elementwise_affine=false has no weight (the modded-nanogpt speedrun's choice). eps
// unset: the machine epsilon of the input's dtype, as torch's.
#pragma once
#include <optional>

#include "nn/module.h"

namespace ag::nn {

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t dim, std::optional<double> eps = std::nullopt, bool elementwise_affine = true,
                   DType dtype = DType::Float32);
  Tensor forward(const Tensor& x) const override;

  int64_t dim;
  std::optional<double> eps;
  Tensor weight;  // (dim), or undefined
};

}  // namespace ag::nn
