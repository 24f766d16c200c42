// LayerNorm over the trailing dims `normalized_shape` (the last dim alone for an integer), eps
// 1e-5, weight 1 and bias 0 of normalized_shape at init, as in PyTorch (an empty normalized_shape
// is accepted, and refused by forward with torch's message, as torch does):
//   nn::LayerNorm ln(64);                   // torch.nn.LayerNorm(64)
//   nn::LayerNorm ln2({2, 2}, 2e-5);         // torch.nn.LayerNorm([2, 2], eps=2e-5)
#pragma once
#include "nn/module.h"

namespace ag::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool elementwise_affine = true, DType dtype = DType::Float32);
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     DType dtype = DType::Float32);
  Tensor forward(const Tensor& x) const override;

  Shape normalized_shape;
  int64_t dim;  // the number of elements normalised together (the last dim for one dim)
  double eps;
  Tensor weight, bias;  // normalized_shape each, or undefined
};

}  // namespace ag::nn
