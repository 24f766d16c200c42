#include "models/model_size.h"

#include "base/checked.h"

namespace ag::models {

int64_t memory_bytes(int64_t parameters, int64_t activation_floats_per_position, int64_t positions, bool training) {
  using checked::add;
  using checked::mul;
  const char* what = "memory estimate";
  const int64_t activations = mul(positions, activation_floats_per_position, what);
  // Weights (+ gradients and AdamW's two moments when training) and the activations (+ their
  // gradients when training).
  return add(mul(training ? 16 : 4, parameters, what), mul(training ? 8 : 4, activations, what), what);
}

}  // namespace ag::models
