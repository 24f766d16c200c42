// LayerNorm over the last dim, eps 1e-5, weight 1 and bias 0 at init, as in PyTorch.
#pragma once
#include "nn/module.h"

namespace ag::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool elementwise_affine = true, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x) const override;

  int64_t dim;
  double eps;
  Tensor weight, bias;  // (dim) each, or undefined
};

}  // namespace ag::nn
