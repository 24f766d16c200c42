// The training loop of `attograd train`: nanoGPT's loop on a character corpus, for any model
// of the registry (models/registry.h), which it knows only through models::LanguageModel.
//   for it in 0 .. iters:
//     at it % eval_every == 0 and at the end: mean loss over eval_iters batches of each
//       split (no-grad, eval mode, its own generator), then a checkpoint;
//     at it == iters: stop;
//     one train::Step (train/step.h): forward, backward, clip, the optimizer's update; then the
//     schedule sets the next step's learning rates (each group's initial_lr times its factor).
// So `iters` updates are made and the last evaluation sees the model after all of them. The
// loop emits events (train/logging/run_logger.h) to its loggers: the console, metrics.jsonl, the run
// folder's files, TensorBoard.
// Under mpirun (distributed/comm.h) every rank runs this loop in step: rank 0 broadcasts the
// initial (or resumed) state, each rank computes its slice of the global batch, gradients
// are averaged over ranks before clipping, evaluation batches are shared out and their losses
// summed, and rank 0 alone has loggers (so it alone writes files and output).
// With grad_report, the step before each evaluation also takes a gradient report (before
// clipping), which that evaluation writes. docs/architecture.md follows one step through it.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/config/run_config.h"
#include "train/logging/run_logger.h"

namespace ag::train {

// Thrown when the loss or a gradient is NaN or Inf (without skip_nonfinite).
struct NonFiniteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainSummary {
  int64_t iters = 0;
  double train_loss = 0, val_loss = 0;  // of the last evaluation
  double seconds = 0;
  double tokens_per_s = 0;
  int64_t skipped_updates = 0;
  bool interrupted = false;  // stopped by SIGINT/SIGTERM after writing a checkpoint
  std::string sample;
};

// What a caller attaches to a run besides its configuration (which stays plain data).
struct RunHooks {
  // Loggers besides the run's own (the console on `out`, metrics.jsonl, the run folder's
  // files), attached after them and on rank 0 only. With `tensorboard` set, the caller attaches
  // TensorBoard's (tensorboard/train_logger.h, a library of its own so that protobuf stays out
  // of this one); the attograd program does.
  std::vector<std::shared_ptr<RunLogger>> loggers{};
  // For tests: after backward (the gradients final, before clipping and the update), and
  // after each step.
  std::function<void(models::LanguageModel&)> after_backward{};
  std::function<void(int64_t iter)> after_step{};
  // The run's clock, in nanoseconds (empty: std::chrono::steady_clock): the elapsed time, the
  // throughput and every decision of --time-budget read it. Tests give a fake one, so that a
  // budgeted run's decisions do not depend on the machine.
  std::function<int64_t()> clock{};
};

// A new run in cfg.out_dir (its metrics.jsonl is started afresh, its config.toml written).
// With cfg.init_from, its model (configuration, vocabulary and weights; cfg.model.dropout
// excepted) comes from that checkpoint, and the corpus must have the same vocabulary.
// Throws ConfigError (train/config/config_error.h) for a configuration that cannot work.
TrainSummary train_lm(const TrainConfig& cfg, std::ostream& out, const RunHooks& hooks = {});

// Continues the run in dir from dir/train_state.safetensors, exactly, with the configuration
// saved there: resumed_config(saved, now, given) (train/config/run_config.h), out_dir = dir. A new
// data path must hold a corpus of the same vocabulary.
TrainSummary resume_lm(const std::string& dir, const TrainConfig& now, const std::set<std::string>& given,
                       std::ostream& out, const RunHooks& hooks = {});
// `--resume DIR --iters N` with N different from the saved iters: the run continues as if N
// had been given from the start, which is exact only if the steps already taken have the
// same learning rate under both schedules (all within the warmup, or min_lr == lr; compared
// bit for bit). Throws ConfigError (a usage error) saying why otherwise, or when N < steps taken.
void check_iters_change(const TrainConfig& saved, int64_t new_iters, int64_t steps_taken, const std::string& dir);
// --precision and --gemm given with --resume: accepted only as recorded (--gemm auto too: the
// recorded choice stays); otherwise ConfigError with the recorded value.
void check_recorded_choices(const TrainConfig& saved, const TrainConfig& now, const std::set<std::string>& given,
                            const std::string& dir);

// The same, given only the fields that may change: data_path (when not empty), threads and
// whether to show a progress bar.
TrainSummary resume_lm(const std::string& dir, const std::string& data_path, int threads, bool progress_bar,
                       std::ostream& out, const RunHooks& hooks = {});

}  // namespace ag::train
