#include "nn/rms_norm.h"

#include "autograd/ops.h"

namespace ag::nn {

RMSNorm::RMSNorm(int64_t d, std::optional<double> e, bool affine, DType dtype) : dim(d), eps(e) {
  if (d <= 0) throw std::invalid_argument("RMSNorm: dim must be positive, got " + std::to_string(d));
  // A constant: nothing is drawn from the generator.
  if (affine) weight = register_parameter("weight", {{d}, Init::ones(), OptimGroup::NoDecay, 0}, dtype, default_generator());
}

Tensor RMSNorm::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != dim)
    throw std::invalid_argument("RMSNorm: input " + describe(x) + " must end in dim " + std::to_string(dim));
  return rms_norm(x, weight, eps);
}

}  // namespace ag::nn
