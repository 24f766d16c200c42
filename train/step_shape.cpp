#include "train/step_shape.h"

#include <algorithm>

namespace ag::train {

namespace {
// From `start` at step 0 to `full` at step `warmup`, linearly, rounded down to a multiple of
// `unit`, within [start, full]; `full` from step `warmup` on.
int64_t ramp(int64_t start, int64_t full, int64_t warmup, int64_t unit, int64_t it) {
  if (warmup <= 0 || it >= warmup || start >= full) return full;
  const int64_t linear = start + (full - start) * it / warmup;  // full − start and it are small: no overflow
  return std::clamp(linear - linear % unit, start, full);
}
}  // namespace

StepShape step_shape(const TrainConfig& cfg, int64_t it, int64_t ranks) {
  return {ramp(cfg.batch_start, cfg.batch_size, cfg.batch_warmup, ranks * cfg.grad_accum, it),
          ramp(cfg.block_start, cfg.model.block_size, cfg.block_warmup, 8, it)};
}

int64_t full_shape_from(const TrainConfig& cfg) { return std::max(cfg.block_warmup, cfg.batch_warmup); }

double step_share(const TrainConfig& cfg, int64_t it, int64_t ranks) {
  if (it >= full_shape_from(cfg)) return 1.0;
  return static_cast<double>(step_shape(cfg, it, ranks).tokens()) / static_cast<double>(cfg.batch_size * cfg.model.block_size);
}

double tokens_of_steps(const TrainConfig& cfg, int64_t from, int64_t to, int64_t ranks) {
  if (to <= from) return 0;
  const double full = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  const int64_t ramp_end = std::clamp(full_shape_from(cfg), from, to);
  double sum = static_cast<double>(to - ramp_end) * full;
  for (int64_t it = from; it < ramp_end; ++it) sum += static_cast<double>(step_shape(cfg, it, ranks).tokens());
  return sum;
}

}  // namespace ag::train
