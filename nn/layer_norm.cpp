#include "nn/layer_norm.h"

#include "autograd/ops.h"

namespace ag::nn {

LayerNorm::LayerNorm(int64_t d, double e, bool affine, DType dtype) : LayerNorm(Shape{d}, e, affine, dtype) {}

LayerNorm::LayerNorm(Shape shape, double e, bool affine, DType dtype)
    : normalized_shape(std::move(shape)), dim(shape_numel(normalized_shape)), eps(e) {
  if (normalized_shape.empty()) throw std::invalid_argument("LayerNorm: normalized_shape must not be empty");
  for (int64_t d : normalized_shape)
    if (d <= 0) throw std::invalid_argument("LayerNorm: normalized_shape " + shape_str(normalized_shape) + " must be positive");
  if (affine) {
    weight = register_parameter("weight", Tensor::ones(normalized_shape, dtype));
    bias = register_parameter("bias", Tensor::zeros(normalized_shape, dtype));
  }
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, normalized_shape, weight, bias, eps); }

}  // namespace ag::nn
