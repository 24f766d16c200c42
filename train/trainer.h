// The training loop of `attograd train`: nanoGPT's loop on a character corpus.
//   for it in 0 .. iters:
//     at it % eval_every == 0 and at the end: mean loss over eval_iters batches of each
//       split (no-grad, eval mode, its own generator), metrics line, checkpoint;
//     at it == iters: stop;
//     lr = schedule(it); loss = model(x, y); backward; clip; AdamW step.
// So `iters` updates are made and the last evaluation sees the model after all of them.
// Under mpirun (train/distributed.h) every rank runs this loop in step: rank 0 broadcasts the
// initial (or resumed) state, each rank computes its slice of the global batch, gradients
// are averaged over ranks before clipping, evaluation batches are shared out and their losses
// summed, and rank 0 alone writes files and output.
// With grad_report, the step before each evaluation also takes a gradient report (before
// clipping), which that evaluation writes.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>

#include "models/transformer_lm.h"

namespace ag::train {

struct TrainConfig {
  std::string data_path;
  std::string out_dir;
  models::GPTConfig model;  // vocab_size comes from the corpus
  int64_t batch_size = 12;  // the global batch: under mpirun each of the N ranks takes batch / N rows
  int64_t grad_accum = 1;   // micro-batches per step (nanoGPT's gradient_accumulation_steps); each
                            // rank runs batch / (N * grad_accum) rows at a time
  int64_t iters = 2000;
  double lr = 1e-3, min_lr = 1e-4;
  int64_t warmup = 100;
  double weight_decay = 0.1, beta1 = 0.9, beta2 = 0.99;
  double grad_clip = 1.0;  // 0 disables clipping
  int64_t eval_every = 250, eval_iters = 20;
  int64_t log_every = 10;
  uint64_t seed = 1337;
  int threads = 0;                // attograd threads (OpenBLAS single-threaded inside); 0: one per core
  int64_t sample_tokens = 300;    // printed at the end; 0 for none
  bool progress_bar = true;       // only used when stdout is a terminal
  bool skip_nonfinite = false;    // skip updates whose loss or gradients are NaN/Inf, and count them
  bool grad_report = false;       // at each evaluation, write out_dir/grad_report_iter<N>.txt (the
                                  // gradients of the step before it; train/grad_report.h) and a summary line
  // Hooks for tests: after backward (before clipping and the update), and after each step.
  std::function<void(models::TransformerLM&)> after_backward;
  std::function<void(int64_t iter)> after_step;
};

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

// A new run in cfg.out_dir (its metrics.jsonl is started afresh).
TrainSummary train_lm(const TrainConfig& cfg, std::ostream& out);

// Continues the run in dir from dir/train_state.safetensors, exactly. data_path, when not
// empty, replaces the corpus path saved in the state (its vocabulary must match); grad_accum,
// when > 0, replaces the saved one (the global batch, and so the run, stays the same).
TrainSummary resume_lm(const std::string& dir, const std::string& data_path, int threads, bool progress_bar,
                       std::ostream& out, int64_t grad_accum = 0);

}  // namespace ag::train
