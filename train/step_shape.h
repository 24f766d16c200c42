// The shape of each step's training batch: (batch, block) at every step, unless a warmup makes
// the early steps smaller (docs/speedrun.md):
//   --block-warmup W: the sequence length rises linearly from --block-start at step 0 to the
//     model's block at step W, rounded down to a multiple of 8 (so that the steps take at most
//     block/8 shapes, not one per step), never below --block-start;
//   --batch-warmup W: the batch rises linearly from --batch-start to --batch at step W, rounded
//     down to a multiple of ranks × --grad-accum (every rank takes its share in micro-batches).
// A shape depends on the step alone, so the batches' random draws (one per row, from the run's
// batch generator) stay reproducible and a resumed run draws what the run that never stopped
// drew. The model is the same throughout (its positions cover any length up to block), and
// evaluations always use (batch, block).
#pragma once
#include <cstdint>

#include "train/config/run_config.h"

namespace ag::train {

struct StepShape {
  int64_t batch = 0;  // sequences (global: over every rank)
  int64_t block = 0;  // positions of each
  int64_t tokens() const { return batch * block; }
};

// Step it's (0-based) shape, for a run over `ranks` processes.
StepShape step_shape(const TrainConfig& cfg, int64_t it, int64_t ranks);

// The first step from which every step has the full shape (0 without a warmup).
int64_t full_shape_from(const TrainConfig& cfg);

// Step it's tokens over a full step's (batch × block), in (0, 1]: 1 exactly from
// full_shape_from(cfg) on.
double step_share(const TrainConfig& cfg, int64_t it, int64_t ranks);

// The tokens of steps [from, to).
double tokens_of_steps(const TrainConfig& cfg, int64_t from, int64_t to, int64_t ranks);

}  // namespace ag::train
