#include "nn/linear.h"

#include <cmath>

#include "autograd/ops.h"
#include "nn/init.h"

namespace ag::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, DType dtype, Generator& gen)
    : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: features must be positive, got in=" + std::to_string(in) + " out=" + std::to_string(out));
  weight = register_parameter("weight", Tensor::empty({out, in}, dtype));
  init::kaiming_uniform_linear_(weight, gen);
  if (with_bias) {
    bias = register_parameter("bias", Tensor::empty({out}, dtype));
    const double b = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -b, b, gen);
  }
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

}  // namespace ag::nn
