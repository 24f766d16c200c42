#include "nn/rms_norm.h"

#include "autograd/ops.h"

namespace ag::nn {

RMSNorm::RMSNorm(int64_t d, std::optional<double> e, bool affine, DType dtype) : dim(d), eps(e) {
  if (d <= 0) throw std::invalid_argument("RMSNorm: dim must be positive, got " + std::to_string(d));
  if (affine) weight = register_parameter("weight", Tensor::ones({d}, dtype));
}

Tensor RMSNorm::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != dim)
    throw std::invalid_argument("RMSNorm: input " + describe(x) + " must end in dim " + std::to_string(dim));
  return rms_norm(x, weight, eps);
}

}  // namespace ag::nn
