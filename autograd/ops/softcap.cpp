// Logit soft-capping: cap · tanh(x / cap). Composed of ops (its gradient and every higher one
// come from theirs): on the logits (B·T, V) it is a small fraction of a step, not worth a kernel.
#include <string>

#include "autograd/ops.h"

namespace ag {

Tensor softcap(const Tensor& x, double cap) {
  if (!(cap > 0)) throw std::invalid_argument("softcap: cap must be positive, got " + std::to_string(cap));
  return mul(tanh(mul(x, 1.0 / cap)), cap);
}

}  // namespace ag
