// nanoGPT's learning-rate schedule: linear warmup, then cosine decay to min_lr.
#pragma once
#include <cstdint>

namespace ag::train {

struct CosineSchedule {
  double max_lr = 1e-3, min_lr = 1e-4;
  int64_t warmup_iters = 100, decay_iters = 2000;
  // it < warmup: max_lr·(it+1)/(warmup+1); it > decay_iters: min_lr; else cosine from max_lr to min_lr.
  double lr(int64_t it) const;
};

}  // namespace ag::train
