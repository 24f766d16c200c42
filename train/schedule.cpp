#include "train/schedule.h"

#include <cmath>
#include <stdexcept>

#include "train/config/run_config.h"

namespace ag::train {

double CosineSchedule::lr(int64_t it) const {
  if (it < warmup_iters) return max_lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  if (it > decay_iters) return min_lr;
  if (decay_iters <= warmup_iters) return min_lr;
  const double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(decay_iters - warmup_iters);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));  // 1 -> 0
  return min_lr + coeff * (max_lr - min_lr);
}

double WarmupStableDecay::lr(int64_t it) const {
  if (it < warmup_iters) return max_lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  const int64_t left = iters - it;  // steps from this one to the end, this one included
  if (left > decay_iters) return max_lr;
  if (left <= 0) return min_lr;
  return min_lr + (max_lr - min_lr) * static_cast<double>(left) / static_cast<double>(decay_iters);
}

void LrSchedule::check_name(const std::string& name) {
  if (name != "cosine" && name != "wsd")
    throw std::invalid_argument("--schedule must be cosine or wsd, got '" + name + "'");
}

int64_t LrSchedule::decay_steps(double cooldown, int64_t iters) {
  return static_cast<int64_t>(std::llround(cooldown * static_cast<double>(iters)));
}

LrSchedule::LrSchedule(const TrainConfig& cfg) {
  check_name(cfg.schedule);
  wsd_ = cfg.schedule == "wsd";
  cosine_ = {cfg.lr, cfg.min_lr, cfg.warmup, cfg.iters};
  wsd_schedule_ = {cfg.lr, cfg.min_lr, cfg.warmup, cfg.iters, decay_steps(cfg.cooldown, cfg.iters)};
}

}  // namespace ag::train
