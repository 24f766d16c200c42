// One training step, exactly as `attograd train` runs it and `attograd bench train` times it:
//
//   zero the gradients                                      (the learning rates are the optimizer's:
//                                                           a schedule sets them between steps)
//   for each of grad_accum micro-batches of this rank's rows of the global batch:
//     loss = model.loss(x, y) / grad_accum; backward        (only the last backward communicates:
//                                                           the Reducer averages the gradients
//                                                           over ranks, buckets starting during it)
//   several ranks agree on the loss (their mean) and on a stop request (SIGINT/SIGTERM to any rank)
//   after_backward(loss)                                    (the gradients before clipping)
//   norm = clip_grad_norm_(grad_clip)                       (measured even when clipping is off)
//   the norm is non-finite exactly when a gradient is: then (torch's error_if_nonfinite: nothing
//   is scaled) or for a non-finite loss the update is skipped and the first non-finite parameter
//   named; else optimizer.step()
//
// A micro-batch of the whole batch (one process, grad_accum 1) is the batch itself, not a view.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "autograd/autocast.h"
#include "models/language_model.h"
#include "distributed/comm.h"
#include "optim/optimizer.h"

namespace ag::train {

struct StepOptions {
  int64_t grad_accum = 1;       // micro-batches per step
  double grad_clip = 1.0;       // clip the global gradient norm to this; 0: off
  bool detect_anomaly = false;  // the forwards and backwards in anomaly mode (autograd/engine.h)
  Precision precision = Precision::FP32;  // the forwards and backwards under autocast at this (autograd/autocast.h)
};

struct StepResult {
  double loss = 0;       // the step's loss: mean over micro-batches and ranks
  double grad_norm = 0;  // global L2 norm of the gradients before clipping (NaN when not finite)
  // Empty when the update was made. Otherwise the update was skipped (gradients zeroed) and
  // this says why: "non-finite gradient at iter 24: loss 2.1, first non-finite gradient in NAME".
  std::string nonfinite;
  // Several ranks: some rank was asked to stop by the time of the agreement (every rank gets
  // the same answer). One process: false; the caller asks InterruptGuard when it is ready to stop.
  bool stop = false;
  std::chrono::steady_clock::time_point backward_end;  // when this rank's last backward returned
};

class Step {
 public:
  // opt updates the model's parameters. With several ranks (comm.distributed()), builds the
  // Reducer over them and hooks it into their gradients; they must already be the same on
  // every rank.
  Step(models::LanguageModel& model, optim::Optimizer& opt, distributed::Comm& comm, StepOptions options);
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  // One step on the global batch x, y (B, T), the same on every rank: rank r takes rows
  // [r·B/N, (r+1)·B/N) in grad_accum micro-batches. `iter` names the step in messages. The
  // model is in training mode; each group's learning rate is what the optimizer holds.
  StepResult run(const Tensor& x, const Tensor& y, int64_t iter);

  // Called after the gradients are final and averaged, before clipping, with the step's loss.
  std::function<void(double loss)> after_backward;

  const distributed::Reducer* reducer() const { return reducer_.get(); }  // null with one rank

 private:
  models::LanguageModel& model_;
  optim::Optimizer& opt_;
  distributed::Comm& comm_;
  StepOptions options_;
  std::unique_ptr<distributed::Reducer> reducer_;
};

}  // namespace ag::train
