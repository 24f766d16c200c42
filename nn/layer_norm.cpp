#include "nn/layer_norm.h"

#include "autograd/ops.h"

namespace ag::nn {

LayerNorm::LayerNorm(int64_t d, double e, bool affine, DType dtype) : dim(d), eps(e) {
  if (d <= 0) throw std::invalid_argument("LayerNorm: dim must be positive, got " + std::to_string(d));
  if (affine) {
    Generator& none = default_generator();  // constants: nothing is drawn
    weight = register_parameter("weight", {{d}, Init::ones(), OptimGroup::NoDecay, 0}, dtype, none);
    bias = register_parameter("bias", {{d}, Init::zeros(), OptimGroup::NoDecay, 0}, dtype, none);
  }
}

Tensor LayerNorm::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != dim)
    throw std::invalid_argument("LayerNorm: input " + describe(x) + " must end in dim " + std::to_string(dim));
  return layer_norm(x, weight, bias, eps);
}

}  // namespace ag::nn
