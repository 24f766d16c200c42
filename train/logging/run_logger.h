// What a training run tells its loggers, and the interface they implement. The loop
// (train/run.cpp) emits events; the loggers turn them into output:
//   ConsoleLogger    the header, progress bar or log lines, evaluations, notes, the end (console_logger.h)
//   MetricsLogger    metrics.jsonl (metrics_logger.h)
//   RunFolderWriter  config.toml, the checkpoints, gradient reports (run_folder_writer.h)
//   TensorBoard's    tensorboard/train_logger.h (a library of its own, attached by the program)
// Loggers are attached on rank 0 only (train_lm / resume_lm do that), so the loop never asks
// which rank it is on. They observe: a run with loggers ends with the same weights as one
// without. A logger that cannot do its job (a write fails) throws, and the run stops with that
// error. A new metric is one field here and one line in each logger that shows it.
#pragma once
#include <cstdint>
#include <string>

#include "data/corpus.h"
#include "models/language_model.h"
#include "train/logging/grad_report.h"
#include "optim/optimizer.h"
#include "tuning/tuning.h"
#include "train/config/run_config.h"
#include "train/run_folder/train_state.h"

namespace ag::train {

// Before the first step.
struct RunStart {
  const TrainConfig& cfg;
  const data::Corpus& corpus;
  const models::LanguageModel& model;
  int64_t start_iter = 0;  // the next step; > 0 when resumed there
  bool resumed = false;
  int64_t ranks = 1;
  int64_t buckets = 0, grad_bytes_per_step = 0;  // of the Reducer, with several ranks
  tuning::PeakFlops peak{};                              // what MFU is measured against
  std::string gemm{};       // "gemm: onednn 2.6.3 (JIT for avx512_core_bf16), chosen by --gemm auto: ..."
  std::string precision{};  // "precision: fp32", or bf16 and which path runs it
};

// After each step (the one that made update `iter`; iter counts updates, 1 .. iters).
struct StepEnd {
  int64_t iter = 0, iters = 0;
  double loss = 0;       // of this step's batch (mean over micro-batches and ranks)
  double lr = 0;         // this step's learning rate: the optimizer's group 0's (the decayed group at --lr)
  double grad_norm = 0;  // global L2 norm of this step's gradients, before clipping
  // Throughput over the steps since the last logged step, this one included (evaluations
  // and samples excluded); at a logged step, what the log line and the metrics show.
  double tokens_per_s = 0;
  double ms_per_step = 0;
  double mfu = 0;  // model FLOPs utilisation of that throughput, 0..1 (train/flops.h)
  double eta_s = 0;
  double elapsed_s = 0;  // of the whole run (a resumed run continues the clock)
  bool logged = false;   // a --log-every step or the last: a metrics line and a log line
  std::string skipped{};  // non-empty: the update was skipped (--skip-nonfinite), and why
  int64_t skipped_updates = 0;
};

// After an evaluation: mean losses over eval_iters batches of each split.
struct EvalEnd {
  int64_t iter = 0;
  double train_loss = 0, val_loss = 0;
  double lr = 0;  // of the step that follows
  double elapsed_s = 0;
  // In eval mode (the loop switches it back), with the weights after `iter` updates and, when
  // a step ran since the run (re)started, that step's gradients (after clipping).
  const models::LanguageModel& model;
  const GradReportFile* grad_report = nullptr;  // with --grad-report, after a step: its report
};

// The run's state after `iter` updates, to be saved (after an evaluation, or on a stop).
struct Checkpoint {
  int64_t iter = 0;
  bool best = false;  // the best validation loss so far
  const TrainConfig& cfg;
  const models::LanguageModel& model;
  const optim::Optimizer& opt;
  const RunPosition& pos;
  const data::CharTokenizer& tokenizer;
};

// A sample from the model (its own generator: sampling never moves the run's streams).
struct Sample {
  int64_t iter = 0;
  std::string text{};
  bool final = false;      // the one at the end (--sample-tokens), else --sample-every's
  int interrupted_by = 0;  // a signal cut the sample short (the run itself is complete)
};

// The end: finished, or stopped by a signal after writing a checkpoint.
struct Stop {
  bool interrupted = false;
  int signal = 0;  // interrupted: the signal (0: it reached another rank)
  int64_t iter = 0, iters = 0;
  int64_t ranks = 1;
  double seconds = 0;
  double val_loss = 0;  // of the last evaluation
  int64_t skipped_updates = 0;
  std::string dir{};  // the run folder
};

class RunLogger {
 public:
  virtual ~RunLogger() = default;
  virtual void on_start(const RunStart&) {}
  virtual void on_step(const StepEnd&) {}
  virtual void on_eval(const EvalEnd&) {}
  virtual void on_checkpoint(const Checkpoint&) {}
  virtual void on_sample(const Sample&) {}
  virtual void on_stop(const Stop&) {}
  // A line for the person watching: a warning, a note (the console shows it, files need not).
  virtual void on_note(const std::string& /*line*/) {}
};

}  // namespace ag::train
