#include "nn/linear.h"

#include <cmath>

#include "autograd/ops.h"
#include "nn/init.h"

namespace ag::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, DType dtype, Generator& gen)
    : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: features must be positive, got in=" + std::to_string(in) + " out=" + std::to_string(out));
  // PyTorch's init: kaiming_uniform(a=√5) for the weight, which is U(±1/√in) (its bound as torch
  // computes it), and U(±1/√in) for the bias. A weight applied at every position is a hidden
  // matrix until its model says otherwise (an output head: set_role).
  const Init w = Init::uniform(init::kaiming_uniform_bound(in, std::sqrt(5.0)));
  weight = register_parameter("weight", {{out, in}, w, OptimGroup::Matrix, 1}, dtype, gen);
  const Init b = Init::uniform(1.0 / std::sqrt(static_cast<double>(in)));
  if (with_bias) bias = register_parameter("bias", {{out}, b, OptimGroup::NoDecay, 0}, dtype, gen);
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

}  // namespace ag::nn
