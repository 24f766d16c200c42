// Learning-rate schedules, chosen by `attograd train --schedule`:
//   cosine  nanoGPT's: linear warmup, then cosine decay from lr to min_lr at the last step;
//   wsd     warmup–stable–decay (trapezoidal, the modded-nanogpt speedrun's): linear warmup,
//           lr held, then a linear decay to min_lr over the last --cooldown fraction of the steps.
// In both, step it < warmup runs at lr·(it+1)/(warmup+1).
#pragma once
#include <cstdint>
#include <string>

namespace ag::train {

struct TrainConfig;

struct CosineSchedule {
  double max_lr = 1e-3, min_lr = 1e-4;
  int64_t warmup_iters = 100, decay_iters = 2000;
  // it < warmup: max_lr·(it+1)/(warmup+1); it > decay_iters: min_lr; else cosine from max_lr to min_lr.
  double lr(int64_t it) const;
};

struct WarmupStableDecay {
  double max_lr = 1e-3, min_lr = 0.0;
  int64_t warmup_iters = 0, iters = 1000, decay_iters = 400;  // the decay: steps iters − decay_iters .. iters − 1
  // it < warmup: max_lr·(it+1)/(warmup+1); then max_lr until the decay; in it, step
  // iters − k (k = decay_iters .. 1) runs at min_lr + (max_lr − min_lr)·k/decay_iters.
  double lr(int64_t it) const;
};

// The schedule a run's configuration names (its schedule, lr, min_lr, warmup, iters, cooldown).
class LrSchedule {
 public:
  explicit LrSchedule(const TrainConfig& cfg);
  double lr(int64_t it) const { return wsd_ ? wsd_schedule_.lr(it) : cosine_.lr(it); }
  // "cosine" or "wsd"; throws std::invalid_argument naming --schedule otherwise.
  static void check_name(const std::string& name);
  // The steps of WarmupStableDecay's decay for a run of iters steps.
  static int64_t decay_steps(double cooldown, int64_t iters);

 private:
  bool wsd_ = false;
  CosineSchedule cosine_;
  WarmupStableDecay wsd_schedule_;
};

}  // namespace ag::train
