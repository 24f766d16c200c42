#include "train/schedule.h"

#include <cmath>

namespace ag::train {

double CosineSchedule::lr(int64_t it) const {
  if (it < warmup_iters) return max_lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  if (it > decay_iters) return min_lr;
  if (decay_iters <= warmup_iters) return min_lr;
  const double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(decay_iters - warmup_iters);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));  // 1 -> 0
  return min_lr + coeff * (max_lr - min_lr);
}

}  // namespace ag::train
