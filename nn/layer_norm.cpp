#include "nn/layer_norm.h"

#include "autograd/ops.h"

namespace ag::nn {

LayerNorm::LayerNorm(int64_t d, double e, bool affine, DType dtype) : LayerNorm(Shape{d}, e, affine, dtype) {}

LayerNorm::LayerNorm(Shape shape, double e, bool affine, DType dtype)
    : normalized_shape(std::move(shape)), dim(shape_numel(normalized_shape)), eps(e) {
  for (int64_t d : normalized_shape)
    if (d <= 0) throw std::invalid_argument("LayerNorm: normalized_shape " + shape_str(normalized_shape) + " must be positive");
  if (affine) {
    Generator& none = default_generator();  // constants: nothing is drawn
    weight = register_parameter("weight", {normalized_shape, Init::ones(), OptimGroup::NoDecay, 0}, dtype, none);
    bias = register_parameter("bias", {normalized_shape, Init::zeros(), OptimGroup::NoDecay, 0}, dtype, none);
  }
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, normalized_shape, weight, bias, eps); }

}  // namespace ag::nn
