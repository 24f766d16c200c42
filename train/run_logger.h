// An observer of a training run: the trainer calls it at the start, at each logged step and
// after each evaluation (TensorBoard's writer, tensorboard/train_logger.h, is one). It sees the
// run but must not change it: a run with loggers ends with the same weights as one without.
#pragma once
#include <cstdint>

#include "data/corpus.h"
#include "models/language_model.h"

namespace ag::train {

struct TrainConfig;

// A logged step: the one that made update `iter` (iter counts updates, 1 .. iters).
struct LogStep {
  int64_t iter = 0;
  double loss = 0;          // of this step's batch
  double lr = 0;            // this step's learning rate
  double grad_norm = 0;     // global L2 norm of this step's gradients, before clipping
  double tokens_per_s = 0;  // training throughput since the last logged step
  double mfu = 0;           // model FLOPs utilisation of that throughput, 0..1 (train/flops.h)
};

// An evaluation after `iter` updates: mean losses over eval_iters batches of each split.
struct EvalStep {
  int64_t iter = 0;
  double train_loss = 0, val_loss = 0;
};

class RunLogger {
 public:
  virtual ~RunLogger() = default;
  // Before the run's first step; start_iter > 0 when it resumes there.
  virtual void on_start(const TrainConfig&, const data::Corpus&, const models::LanguageModel&, int64_t /*start_iter*/) {}
  virtual void on_log(const LogStep&) {}
  // model: in eval mode (the trainer switches it back), with the weights after eval.iter updates
  // and, when a step ran since the run (re)started, that step's gradients (after clipping).
  virtual void on_eval(const EvalStep&, const models::LanguageModel& /*model*/) {}
};

}  // namespace ag::train
