#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <optional>

#include "autograd/atomic_file.h"
#include "autograd/engine.h"
#include "autograd/input_file.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/memory_limit.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/text_file.h"
#include "models/registry.h"
#include "nn/utils/clip_grad.h"
#include "train/checkpoint.h"
#include "train/config_file.h"
#include "train/config_error.h"
#include "train/distributed.h"
#include "train/flops.h"
#include "train/run_dir.h"
#include "train/grad_report.h"
#include "train/interrupt.h"
#include "train/memory_check.h"
#include "train/optim/adam.h"
#include "train/param_groups.h"
#include "train/profile.h"
#include "train/progress.h"
#include "train/rank_agreement.h"
#include "train/schedule.h"
#include "train/train_state.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;

using NamedParams = std::vector<std::pair<std::string, Tensor>>;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check_config(const TrainConfig& c, Comm& comm) {
  auto positive = [](double v, const char* name) {
    if (!(v > 0)) throw ConfigError(std::string("train: --") + name + " must be positive");
  };
  positive(static_cast<double>(c.batch_size), "batch");
  positive(static_cast<double>(c.eval_every), "eval-every");
  positive(static_cast<double>(c.eval_iters), "eval-iters");
  positive(static_cast<double>(c.log_every), "log-every");
  positive(static_cast<double>(c.grad_accum), "grad-accum");
  const int64_t parts = comm.size() * c.grad_accum;
  if (c.batch_size % parts != 0)
    throw ConfigError("train: --batch " + std::to_string(c.batch_size) + " must be divisible by ranks × --grad-accum = " +
                      std::to_string(comm.size()) + " × " + std::to_string(c.grad_accum) + " = " + std::to_string(parts) +
                      " (the batch is global; each micro-batch gets batch / " + std::to_string(parts) + " rows)");
  positive(c.lr, "lr");
  if (c.sample_every < 0) throw ConfigError("train: --sample-every must be ≥ 0");
  if (c.iters < 0) throw ConfigError("train: --iters must be ≥ 0");
  if (c.profile_steps < 0 || (c.profile_steps > 0 && c.profile_steps >= c.iters))
    throw ConfigError("train: --profile-steps must be in 0..--iters - 1 (the first step is a warm-up, not profiled), got " +
                      std::to_string(c.profile_steps));
  if (c.warmup < 0) throw ConfigError("train: --warmup must be ≥ 0");
  // Each split needs block + 1 characters of a corpus of at most kMaxTextFileBytes.
  if (c.model.block_size > data::kMaxTextFileBytes / 10)
    throw ConfigError("train: --block " + std::to_string(c.model.block_size) + " is larger than any corpus can serve (at most " +
                      std::to_string(data::kMaxTextFileBytes) + " bytes, split 90/10)");
  if (c.sample_tokens < 0) throw ConfigError("train: --sample-tokens must be ≥ 0 (0: no sample)");
  if (c.threads < 0 || c.threads > parallel::kMaxThreads)
    throw ConfigError("train: --threads must be in 0.." + std::to_string(parallel::kMaxThreads) + " (0: one per core)");
  if (!(c.min_lr >= 0)) throw ConfigError("train: --min-lr must be ≥ 0");
  if (!(c.weight_decay >= 0)) throw ConfigError("train: --weight-decay must be ≥ 0");
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
    throw ConfigError("train: --beta1 and --beta2 must be in [0, 1)");
  if (!(c.grad_clip >= 0)) throw ConfigError("train: --grad-clip must be ≥ 0 (0 disables it)");
  if (!(c.comm_timeout == 0 || c.comm_timeout >= 1)) throw ConfigError("train: --comm-timeout must be 0 (wait forever) or at least 1 second");
  if (c.out_dir.empty()) throw ConfigError("train: --out is required");
  if (c.tensorboard && c.loggers.empty() && comm.is_root())  // never silently without the logs asked for
    throw std::invalid_argument("train: tensorboard is set but no writer is attached (tensorboard/train_logger.h)");
  try {
    models::find_model(c.model.name);  // throws for an unknown --model, listing the known ones
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  check_ranks_agree(comm, c);
}

// The model's own checks, then its memory estimate against this machine, before anything is
// built (vocab_size is known once the corpus is read).
void check_model(const TrainConfig& c) {
  try {
    models::find_model(c.model.name).validate(c.model);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  require_training_fits(c);
}

// The name of the first parameter whose gradient holds a NaN or Inf, or "" when all are finite.
std::string first_nonfinite_grad(const NamedParams& params) {
  for (const auto& [name, p] : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const Tensor gc = g.contiguous();
    bool bad = false;
    AG_DISPATCH_FLOAT(gc.dtype(), "nonfinite check", [&] {
      const scalar_t* d = gc.data<scalar_t>();
      scalar_t acc = 0;  // Inf or NaN anywhere makes the product with 0 NaN
      for (int64_t i = 0, n = gc.numel(); i < n; ++i) acc += d[i] * scalar_t(0);
      bad = std::isnan(acc);
    });
    if (bad) return name;
  }
  return "";
}

// Keeps the lines of a metrics.jsonl whose iter ≤ last_iter (what a resumed run has already
// accounted for); later lines belong to steps that will be run again. Rewritten atomically
// (temporary file + rename): a signal or a crash meanwhile leaves the old file whole.
void truncate_metrics(const fs::path& path, int64_t last_iter) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      if (nlohmann::json::parse(line).at("iter").get<int64_t>() <= last_iter) kept += line + "\n";
    } catch (const std::exception&) {
      // a torn last line from a crash: drop it
    }
  }
  in.close();
  write_file_atomically(path.string(), kept);
}

void report_removed(const RunDir& dir, std::ostream& out) {
  for (const auto& f : dir.removed_temporaries()) out << "removed " << f << " (left by a process that was killed)\n";
}

// Every rank must train on the same text: compares a fingerprint of the token ids with rank 0's.
void check_same_corpus(Comm& comm, const data::Corpus& corpus) {
  if (!comm.distributed()) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids of both splits
  for (const auto* ids : {&corpus.train_ids, &corpus.val_ids}) {
    for (int64_t v : *ids) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  uint64_t root = h;
  comm.broadcast(&root, sizeof root);
  if (root != h)
    throw std::runtime_error(corpus.path + ": this text differs from rank 0's corpus (every rank must read the same file)");
}

// The ranks must hold the same weights (the allreduce gives every rank the same sums, and the
// update is deterministic): checked at each evaluation against a fingerprint of rank 0's.
void check_same_weights(Comm& comm, const NamedParams& params, int64_t iter) {
  if (!comm.distributed()) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes of every parameter
  for (const auto& [name, param] : params) {
    const Tensor p = param.is_contiguous() ? param : param.contiguous();
    const unsigned char* b = static_cast<const unsigned char*>(p.raw_data());
    for (size_t i = 0, n = static_cast<size_t>(p.numel()) * dtype_size(p.dtype()); i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  }
  uint64_t root = h;
  comm.broadcast(&root, sizeof root);
  if (root != h)
    throw std::runtime_error("the weights of " + comm.describe(comm.rank()) + " differ from rank 0's at iter " +
                             std::to_string(iter) + " (the ranks no longer train the same model)");
}

// One training run, new or resumed. Owns everything that an exact resume must restore.
class Run {
 public:
  Run(const TrainConfig& cfg, data::Corpus corpus, std::ostream& out, Comm& comm)
      : comm_(comm),
        cfg_(cfg),
        corpus_(std::move(corpus)),
        out_(out),
        model_gen_(cfg.seed),
        batch_gen_(cfg.seed + 1),
        eval_gen_(cfg.seed + 2),
        model_(models::make_model(cfg.model, DType::Float32, model_gen_)),
        opt_(decay_groups(*model_, {.lr = cfg.lr, .betas = {cfg.beta1, cfg.beta2}, .eps = 1e-8, .weight_decay = cfg.weight_decay})),
        sched_{cfg.lr, cfg.min_lr, cfg.warmup, cfg.iters},
        dir_(cfg.out_dir),
        profile_(comm.is_root() ? cfg.profile_steps : 0, cfg.out_dir, "attograd train") {
    model_->train();
    if (comm_.distributed()) {
      // Every rank built the same model from the same seed; rank 0's copy is the one.
      for (auto& [name, p] : model_->named_parameters()) comm_.broadcast(p);
      reducer_ = std::make_unique<Reducer>(comm_, model_->parameters());
      reducer_->attach_hooks();  // buckets start reducing during backward
      decorrelate_dropout();
    }
  }

  // --init-from: the weights of a trained model of the same configuration (fine-tuning).
  void init_weights_from(const models::LanguageModel& trained) {
    std::map<std::string, Tensor> weights;
    for (const auto& [name, p] : trained.named_parameters()) weights[name] = p.detach();
    model_->load_state_dict(weights);
  }

  // The state file's bytes are the same on every rank (rank 0 read and broadcast them).
  void resume_from(const SafeTensorsFile& state, const RunPosition& pos) {
    restore_train_state(state, *model_, opt_);
    pos_ = pos;
    model_gen_.set_state(pos.rng_model);
    batch_gen_.set_state(pos.rng_batch);
    eval_gen_.set_state(pos.rng_eval);
    decorrelate_dropout();
    // The clock and the last evaluation carry on from where the run stopped.
    t_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(pos.elapsed_s));
    summary_.train_loss = pos.last_train_loss;
    summary_.val_loss = pos.last_val_loss;
  }

  // The loop: at each evaluation point evaluate and checkpoint; otherwise step, then log.
  TrainSummary run(bool fresh_metrics);

 private:
  void start(bool fresh_metrics);                  // open metrics.jsonl, print the run's header
  // false when interrupted before it finished (nothing written; it is redone on resume)
  bool evaluate_and_checkpoint(int64_t it, double lr);
  double step(int64_t it, double lr);              // one update (or a skipped one); returns the loss
  void log_step(int64_t it, double loss, double lr);
  TrainSummary stop_interrupted();                 // after a SIGINT/SIGTERM: checkpoint, say how to resume
  void note_kill_timeout(double step_s);           // under mpirun: a step longer than its SIGKILL timer
  TrainSummary finish();                           // the last line and the sample
  bool estimate_loss(const std::vector<int64_t>& ids, double& mean);  // false: interrupted
  double forward_backward();
  void decorrelate_dropout();
  std::string sample_text(int64_t tokens);         // from a newline, temperature 0.8, its own generator
  void write_metrics(int64_t it, double train_loss, const double* val_loss, double lr);
  void save_checkpoint(bool new_best);
  void write_grad_report(int64_t it, bool tty);
  std::string path(const char* name) const { return (dir_ / name).string(); }

  Comm& comm_;
  std::unique_ptr<Reducer> reducer_;  // only with several ranks
  TrainConfig cfg_;
  data::Corpus corpus_;
  std::ostream& out_;
  Generator model_gen_, batch_gen_, eval_gen_;  // init + dropout, training batches, evaluation batches
  std::unique_ptr<models::LanguageModel> model_;
  optim::AdamW opt_;
  CosineSchedule sched_;
  RunPosition pos_;
  fs::path dir_;
  std::ofstream metrics_;
  Clock::time_point t_start_ = Clock::now();
  double tokens_per_s_ = 0;
  double peak_gflops_ = 0;      // the job's sgemm peak: what MFU is measured against
  double flops_per_token_ = 0;  // of a training step
  bool tty_ = false;  // a progress bar on a terminal instead of log lines
  TrainSummary summary_;
  Clock::time_point t_log_;  // throughput since the last log line (evaluations excluded)
  int64_t steps_since_log_ = 0;
  double grad_norm_ = 0;  // of the last step, before clipping (NaN when its update was skipped)
  bool stop_agreed_ = false;  // several ranks: some rank was asked to stop (agreed in the step's allreduce)
  int64_t steps_timed_ = 0;   // by note_kill_timeout (the first step, slower, is not judged)
  bool kill_timeout_noted_ = false;
  // The gradient report taken after the backward of step pending_report_iter_ - 1, for the
  // evaluation at pending_report_iter_.
  std::string pending_report_;
  std::string pending_summary_;
  int64_t pending_report_iter_ = -1;
  // Under mpirun: a collective that waits for a lost peer ends the job (exit status 75)
  // instead of hanging, and the message says where (train/distributed.h).
  CommTimeout comm_timeout_{comm_, cfg_.comm_timeout, [this] {
    return "at iter " + std::to_string(pos_.iter) + "; the last checkpoint in " + dir_.string() +
           " is intact (attograd train --resume " + dir_.string() + ")";
  }};
  ProfileSession profile_;  // --profile-steps
};

// Mean loss over eval_iters random batches, in eval mode and without recording a graph. Uses
// its own generator, so evaluating never changes the training batches. Checks for SIGINT and
// SIGTERM between batches, since a long evaluation must not make a stop request wait.
// With several ranks, every rank draws every batch (the generators stay in step) and computes
// the loss of batches i with i % N == rank; the sum over ranks of these vectors holds each
// loss exactly once (x + 0 is exact), and it is added up in the same order as by one process.
// The ranks agree on a stop before each round of N batches, so they all stop at the same one.
bool Run::estimate_loss(const std::vector<int64_t>& ids, double& mean) {
  NoGradGuard no_grad;
  model_->eval();
  std::vector<double> losses(static_cast<size_t>(cfg_.eval_iters), 0.0);
  for (int64_t i = 0; i < cfg_.eval_iters; ++i) {
    bool stop = InterruptGuard::requested();
    if (comm_.distributed()) {  // agreed at the start of each round, never in between
      double any = stop ? 1.0 : 0.0;
      if (i % comm_.size() == 0) comm_.allreduce_sum(&any, 1);
      stop = i % comm_.size() == 0 && any > 0;
    }
    if (stop) {
      model_->train();
      return false;
    }
    auto [x, y] = data::get_batch(ids, cfg_.batch_size, cfg_.model.block_size, eval_gen_);
    if (i % comm_.size() == comm_.rank()) losses[static_cast<size_t>(i)] = model_->loss(x, y).item();
  }
  comm_.allreduce_sum(losses.data(), static_cast<int>(losses.size()));
  model_->train();
  double total = 0;
  for (double l : losses) total += l;
  mean = total / static_cast<double>(cfg_.eval_iters);
  return true;
}

// Dropout draws from model_gen_. Ranks must not share masks, so ranks other than 0 move to
// a stream of their own, derived from rank 0's (what a checkpoint saves) and the rank.
void Run::decorrelate_dropout() {
  if (comm_.rank() == 0) return;
  Generator::State st = model_gen_.state();
  model_gen_.manual_seed(st[0] ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(comm_.rank())));
}

// The gradient of one step on this rank's slice of the global batch, averaged over ranks
// into every .grad; returns this rank's mean loss over its micro-batches. Every rank draws
// the whole global batch (so the data depend only on the step, never on the number of
// ranks) and takes rows [rank * B/N, (rank + 1) * B/N), in grad_accum micro-batches. Only
// the last micro-batch's backward communicates (DDP's no_sync for the others).
double Run::forward_backward() {
  profiler::ScopeSequence phase("data", profiler::Category::Phase);  // then forward, backward per micro-batch
  auto [x, y] = data::get_batch(corpus_.train_ids, cfg_.batch_size, cfg_.model.block_size, batch_gen_);
  const int64_t K = cfg_.grad_accum, per_rank = cfg_.batch_size / comm_.size(), micro = per_rank / K;
  opt_.zero_grad();
  std::optional<DetectAnomalyGuard> anomaly;  // --detect-anomaly: over this step's forwards and backwards
  std::optional<AnomalyScope> anomaly_step;
  if (cfg_.detect_anomaly) anomaly.emplace(), anomaly_step.emplace("training step " + std::to_string(pos_.iter));
  double loss_sum = 0;
  for (int64_t k = 0; k < K; ++k) {
    phase.next("forward");
    Tensor xs = x, ys = y;  // one process, one micro-batch: the batch itself, as always
    if (micro != cfg_.batch_size) {
      const int64_t row = comm_.rank() * per_rank + k * micro;
      xs = narrow(x, 0, row, micro);
      ys = narrow(y, 0, row, micro);
    }
    Tensor loss = model_->loss(xs, ys);
    loss_sum += loss.item();
    if (K > 1) loss = loss * (1.0 / static_cast<double>(K));  // the step's loss is the mean over micro-batches
    const bool communicate = reducer_ && k == K - 1;
    if (communicate) reducer_->prepare();
    phase.next("backward");
    loss.backward();
  }
  if (reducer_) reducer_->finish();
  return loss_sum / static_cast<double>(K);
}

void Run::write_metrics(int64_t it, double train_loss, const double* val_loss, double lr) {
  if (!comm_.is_root()) return;
  nlohmann::json j = {{"iter", it}, {"train_loss", train_loss}, {"val_loss", nullptr}, {"lr", lr},
                      {"tokens_per_s", tokens_per_s_}, {"mfu", mfu(flops_per_token_, tokens_per_s_, peak_gflops_)},
                      {"elapsed_s", seconds_since(t_start_)}};
  if (val_loss) j["val_loss"] = *val_loss;
  metrics_ << j.dump() << "\n";
  metrics_.flush();
}

// Writes the train state first (self-contained), then the model, then the best model. Each
// file is replaced atomically, so a crash at any moment leaves the previous good one.
void Run::save_checkpoint(bool new_best) {
  if (!comm_.is_root()) return;
  pos_.rng_model = model_gen_.state();
  pos_.rng_batch = batch_gen_.state();
  pos_.rng_eval = eval_gen_.state();
  pos_.elapsed_s = seconds_since(t_start_);
  save_train_state(path("train_state.safetensors"), cfg_, *model_, opt_, pos_, corpus_.tokenizer);
  save_model(path("model.safetensors"), *model_, corpus_.tokenizer);
  if (new_best) save_model(path("model.best.safetensors"), *model_, corpus_.tokenizer);
}

void Run::write_grad_report(int64_t it, bool tty) {
  if (!comm_.is_root()) return;
  if (pending_report_iter_ != it) return;  // no step ran before this evaluation (iter 0, or just resumed)
  const std::string name = "grad_report_iter" + std::to_string(it) + ".txt";
  write_file_atomically(path(name.c_str()), pending_report_);
  out_ << (tty ? "\r\033[K" : "") << "grads iter " << it << "  " << pending_summary_ << "  (" << name << ")\n";
  out_.flush();
  pending_report_iter_ = -1;
}

void Run::start(bool fresh_metrics) {
  const fs::path metrics_path = dir_ / "metrics.jsonl";
  if (comm_.is_root()) {  // rank 0 alone writes files
    if (fresh_metrics) {
      write_file_atomically(metrics_path.string(), "");
      write_config_toml(path("config.toml"), cfg_);  // the run's configuration, resolved and readable
    }
    else truncate_metrics(metrics_path, pos_.iter);
    metrics_.open(metrics_path, std::ios::app);
    if (!metrics_) throw std::runtime_error(metrics_path.string() + ": cannot open for writing");
  }
  tty_ = !cfg_.no_progress && isatty(STDOUT_FILENO) && &out_ == &std::cout;

  out_ << "attograd train: " << corpus_.path << " (" << corpus_.num_tokens() << " characters, vocab "
       << cfg_.model.vocab_size << ", train " << corpus_.train_ids.size() << ", val " << corpus_.val_ids.size() << ")\n"
       << "model: " << model_->summary() << ", " << model_->num_parameters() << " parameters\n"
       << "run: batch " << cfg_.batch_size << ", " << cfg_.iters << " iters, lr " << cfg_.lr << " -> " << cfg_.min_lr
       << ", warmup " << cfg_.warmup << ", seed " << cfg_.seed << ", out " << dir_.string() << "\n";
  if (comm_.distributed() || cfg_.grad_accum > 1)
    out_ << "data parallel: " << comm_.size() << (comm_.size() == 1 ? " rank" : " ranks") << " x " << cfg_.grad_accum
         << " micro-batches of " << cfg_.batch_size / (comm_.size() * cfg_.grad_accum) << " rows"
         << (reducer_ ? ", gradients averaged in " + std::to_string(reducer_->buckets().size()) + " buckets (" +
                            std::to_string(reducer_->bytes_per_step() / 1024) + " KiB per step)"
                      : std::string())
         << "\n";
  // MFU's denominator. Every rank measures its own cores at once (ranks that share a machine
  // share its cores, as they do while training), and the job's peak is the sum.
  peak_gflops_ = sgemm_peak_gflops(parallel::num_threads());
  if (comm_.distributed()) comm_.allreduce_sum(&peak_gflops_, 1);
  flops_per_token_ = train_flops_per_token(*model_, cfg_.batch_size);
  char peak[96];
  std::snprintf(peak, sizeof peak, "mfu: of a measured sgemm peak of %.0f GFLOP/s\n", peak_gflops_);
  out_ << peak;
  if (pos_.iter > 0) out_ << "resuming at iter " << pos_.iter << "\n";
  out_.flush();
  for (const auto& l : cfg_.loggers) l->on_start(cfg_, corpus_, *model_, pos_.iter);
  t_log_ = Clock::now();
}

TrainSummary Run::run(bool fresh_metrics) {
  InterruptGuard interrupts;  // first: a signal during start() must not kill a half-written metrics file
  start(fresh_metrics);
  for (int64_t& it = pos_.iter;; ++it) {
    const double lr = sched_.lr(it);
    if ((it % cfg_.eval_every == 0 || it == cfg_.iters) && !pos_.eval_done && !evaluate_and_checkpoint(it, lr))
      return stop_interrupted();
    if (it == cfg_.iters) break;
    profile_.begin_step(it);
    const double loss = step(it, lr);
    profile_.end_step(out_);
    log_step(it, loss, lr);
    if (cfg_.sample_every > 0 && comm_.is_root() && (it + 1) % cfg_.sample_every == 0 && it + 1 != cfg_.iters) {
      out_ << (tty_ ? "\r\033[K" : "") << "---- sample at iter " << it + 1 << " ----" << sample_text(100) << "\n----\n";
      out_.flush();
    }
    // One process stops when a signal arrived during the step; several ranks when any rank had
    // one by the time of the step's allreduce (all of them then stop after the same step).
    if (comm_.distributed() ? stop_agreed_ : InterruptGuard::requested()) {
      ++it;  // this step is complete: the run continues at the next one
      return stop_interrupted();
    }
  }
  return finish();
}

bool Run::evaluate_and_checkpoint(int64_t it, double lr) {
  check_same_weights(comm_, model_->named_parameters(), it);
  const Generator::State eval_start = eval_gen_.state();
  double tl = 0, vl = 0;
  if (!estimate_loss(corpus_.train_ids, tl) || !estimate_loss(corpus_.val_ids, vl)) {
    eval_gen_.set_state(eval_start);  // the checkpoint then resumes into this same evaluation
    return false;
  }
  // A model that evaluates to NaN or Inf is not saved over the last good checkpoint.
  if (!std::isfinite(tl) || !std::isfinite(vl)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "non-finite evaluation at iter %ld: train loss %g, val loss %g", static_cast<long>(it),
                  tl, vl);
    throw NonFiniteError(std::string(msg) + "; the model is not saved. The last good checkpoint in " + dir_.string() +
                         " is kept (a lower --lr may help)");
  }
  summary_.train_loss = tl;
  summary_.val_loss = vl;
  write_metrics(it, tl, &vl, lr);
  const bool best = vl < pos_.best_val_loss;
  if (best) pos_.best_val_loss = vl;
  pos_.last_train_loss = tl;
  pos_.last_val_loss = vl;
  pos_.eval_done = true;
  save_checkpoint(best);
  char line[160];
  std::snprintf(line, sizeof line, "eval  iter %5ld  train %.4f  val %.4f  (%s)", static_cast<long>(it), tl, vl,
                format_duration(seconds_since(t_start_)).c_str());
  out_ << (tty_ ? "\r\033[K" : "") << line << "\n";
  out_.flush();
  if (cfg_.grad_report) write_grad_report(it, tty_);
  if (!cfg_.loggers.empty()) {
    model_->eval();
    for (const auto& l : cfg_.loggers) l->on_eval({it, tl, vl}, *model_);
    model_->train();
  }
  t_log_ = Clock::now();  // evaluation time is not training throughput
  steps_since_log_ = 0;
  return true;
}

double Run::step(int64_t it, double lr) {
  const Clock::time_point t0 = Clock::now();
  for (auto& group : opt_.param_groups()) group.options.lr = lr;
  double loss_v = forward_backward();
  // checks, clipping, AdamW (and with several ranks the agreement on the loss)
  const profiler::RecordScope phase("optimizer", profiler::Category::Phase);
  // With several ranks: the step's loss is the mean of the ranks' losses, and a stop asked
  // of any rank (SIGINT/SIGTERM) is agreed on by all, so all stop after this same step.
  if (comm_.distributed()) {
    double agree[2] = {loss_v, InterruptGuard::requested() ? 1.0 : 0.0};
    comm_.allreduce_sum(agree, 2);
    loss_v = agree[0] / static_cast<double>(comm_.size());
    stop_agreed_ = agree[1] > 0;
  }
  if (cfg_.after_backward) cfg_.after_backward(*model_);
  if (cfg_.grad_report && ((it + 1) % cfg_.eval_every == 0 || it + 1 == cfg_.iters)) {
    const GradReport rep = grad_report(model_->named_parameters());
    char head[200];
    std::snprintf(head, sizeof head, "gradients of step %ld (the last before the evaluation at iter %ld), before clipping; loss %.4f\n\n",
                  static_cast<long>(it), static_cast<long>(it + 1), loss_v);
    pending_report_ = head + format_grad_report(rep);
    pending_summary_ = grad_report_summary(rep);
    pending_report_iter_ = it + 1;
  }
  grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  const std::string bad = std::isfinite(loss_v) ? first_nonfinite_grad(model_->named_parameters()) : "(the loss itself)";
  if (!bad.empty()) {
    char msg[512];
    std::snprintf(msg, sizeof msg, "non-finite %s at iter %ld: loss %g, first non-finite gradient in %s",
                  std::isfinite(loss_v) ? "gradient" : "loss", static_cast<long>(it), loss_v, bad.c_str());
    if (!cfg_.skip_nonfinite)
      throw NonFiniteError(std::string(msg) + "; stopped without updating. The last good checkpoint in " +
                           dir_.string() + " is kept (use --skip-nonfinite to skip such steps)");
    ++pos_.skipped_updates;
    out_ << (tty_ ? "\r\033[K" : "") << msg << "; update skipped (" << pos_.skipped_updates << " so far)\n";
    opt_.zero_grad();
  } else {
    // The norm before clipping; with clipping off, infinity as the bound only measures it.
    grad_norm_ = nn::utils::clip_grad_norm_(model_->parameters(), cfg_.grad_clip > 0 ? cfg_.grad_clip : std::numeric_limits<double>::infinity());
    opt_.step();
  }
  pos_.eval_done = false;
  ++steps_since_log_;
  if (cfg_.after_step) cfg_.after_step(it);
  if (comm_.distributed()) note_kill_timeout(seconds_since(t0));
  return loss_v;
}

// After a Ctrl-C or SIGTERM to mpirun the ranks have mpirun's kill timeout to finish their step
// and checkpoint. When a step alone takes longer, such a stop would be a SIGKILL that loses the
// steps since the last checkpoint: rank 0 says so once, and what to do.
void Run::note_kill_timeout(double step_s) {
  const double limit = comm_.mpirun_kill_timeout_seconds();
  if (kill_timeout_noted_ || limit <= 0 || ++steps_timed_ < 2 || step_s < limit) return;
  kill_timeout_noted_ = true;
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "note: a step takes %.1f s, longer than the %g s mpirun leaves the ranks between its SIGTERM and its "
                "SIGKILL after a Ctrl-C or SIGTERM to mpirun, so such a stop would lose the steps since the last "
                "checkpoint. Start mpirun with --mca odls_base_sigkill_timeout %.0f, or stop the job with SIGTERM "
                "to one rank (docs/distributed.md)\n",
                step_s, limit, std::ceil(3 * step_s + 5));
  out_ << (tty_ ? "\r\033[K" : "") << msg;
  out_.flush();
}

void Run::log_step(int64_t it, double loss_v, double lr) {
  const bool log_now = (it + 1) % cfg_.log_every == 0 || it + 1 == cfg_.iters;
  if (!log_now && !tty_) return;
  const double tokens_per_step = static_cast<double>(cfg_.batch_size * cfg_.model.block_size);
  const double dt = seconds_since(t_log_);
  if (log_now && dt > 0) tokens_per_s_ = tokens_per_step * static_cast<double>(steps_since_log_) / dt;
  const double done = static_cast<double>(it + 1), total = static_cast<double>(cfg_.iters);
  const double eta = tokens_per_s_ > 0 ? (total - done) * tokens_per_step / tokens_per_s_ : 0;
  const double mfu_now = mfu(flops_per_token_, tokens_per_s_, peak_gflops_);
  char line[200];
  if (tty_) {
    // The rate since the last logged step (at a logged step, tokens_per_s_ itself), so that
    // tokens/s and the ETA show from the first step on.
    const double rate = dt > 0 ? tokens_per_step * static_cast<double>(steps_since_log_) / dt : tokens_per_s_;
    const double eta_now = rate > 0 ? (total - done) * tokens_per_step / rate : 0;
    out_ << "\r\033[K"
         << progress_line({it + 1, cfg_.iters, loss_v, lr, rate, eta_now, mfu(flops_per_token_, rate, peak_gflops_)},
                          terminal_columns(STDOUT_FILENO));
  } else {
    std::snprintf(line, sizeof line, "iter %5ld/%ld  loss %.4f  lr %.3e  %.0f tok/s  mfu %.1f%%  ETA %s\n",
                  static_cast<long>(it + 1), static_cast<long>(cfg_.iters), loss_v, lr, tokens_per_s_, 100 * mfu_now,
                  format_duration(eta).c_str());
    out_ << line;
  }
  out_.flush();
  if (log_now) {
    write_metrics(it + 1, loss_v, nullptr, lr);
    for (const auto& l : cfg_.loggers) l->on_log({it + 1, loss_v, lr, grad_norm_, tokens_per_s_, mfu_now});
    t_log_ = Clock::now();
    steps_since_log_ = 0;
  }
}

TrainSummary Run::stop_interrupted() {
  save_checkpoint(false);
  // With several ranks no rank may exit before all are done: the first rank to exit makes
  // mpirun kill the others, and at once when mpirun itself was signalled (its wait between
  // SIGTERM and SIGKILL ends when a child exits). So every rank has stopped after pos_.iter
  // and rank 0 has its checkpoint (barrier); rank 0 says so; then everyone may exit (barrier).
  comm_.barrier();
  const int sig = InterruptGuard::signal_number();  // 0: the signal reached another rank
  out_ << (tty_ ? "\r\033[K" : "") << "\ninterrupted ("
       << (sig ? "signal " + std::to_string(sig) : std::string("a signal to another rank")) << ") after iter " << pos_.iter
       << (comm_.distributed() ? " on all " + std::to_string(comm_.size()) + " ranks" : std::string())
       << "; checkpoint written to " << dir_.string() << "\nresume with: attograd train --resume "
       << dir_.string() << "\n";
  out_.flush();
  if (comm_.distributed()) {
    comm_.barrier();  // rank 0's line is out (in the pipe to mpirun) before any rank exits
    comm_.skip_finalize_at_exit();
  }
  summary_.interrupted = true;
  summary_.iters = pos_.iter;
  summary_.skipped_updates = pos_.skipped_updates;
  return summary_;
}

TrainSummary Run::finish() {
  profile_.finish(out_);  // when the run ended before the last profiled step
  TrainSummary& summary = summary_;
  summary.iters = cfg_.iters;
  summary.seconds = seconds_since(t_start_);
  summary.tokens_per_s = tokens_per_s_;
  summary.skipped_updates = pos_.skipped_updates;
  out_ << "done: " << cfg_.iters << " iters in " << format_duration(summary.seconds) << ", val loss " << summary.val_loss
       << ", model " << path("model.safetensors");
  if (pos_.skipped_updates) out_ << ", " << pos_.skipped_updates << " updates skipped (non-finite)";
  out_ << "\n";
  if (cfg_.sample_tokens > 0 && comm_.is_root()) {
    summary.sample = sample_text(cfg_.sample_tokens);
    out_ << "---- sample (temperature 0.8) ----" << summary.sample << "\n----\n";
    if (InterruptGuard::requested()) {
      out_ << "sample interrupted (signal " << InterruptGuard::signal_number() << "); the run itself is complete\n";
      summary.interrupted = true;
    }
  }
  return summary;
}

std::string Run::sample_text(int64_t tokens) {
  // A generator of its own, seeded alike each time: sampling never moves the run's streams.
  Generator sample_gen(cfg_.seed);
  model_->eval();
  const int64_t nl = corpus_.tokenizer.id_of(U'\n');
  models::SampleOptions opt{tokens, 0.8, 0, true};
  opt.on_token = [](int64_t) { return !InterruptGuard::requested(); };  // Ctrl-C ends the sample
  const auto ids = model_->generate({nl >= 0 ? nl : 0}, opt, sample_gen);
  model_->train();
  return corpus_.tokenizer.decode(ids);
}
}  // namespace

TrainSummary train_lm(const TrainConfig& cfg_in, std::ostream& out) {
  TrainConfig cfg = cfg_in;
  Comm& comm = Comm::world();
  check_config(cfg, comm);
  // 0: all cores for one process; under mpirun, the cores shared among this machine's ranks.
  if (cfg.threads > 0 || comm.distributed()) parallel::set_num_threads(cfg.threads > 0 ? cfg.threads : comm.threads_per_rank());
  std::optional<LoadedModel> init;
  if (!cfg.init_from.empty()) {  // the model and its vocabulary come from the checkpoint
    init = load_model(cfg.init_from);
    const double dropout = cfg.model.dropout;  // nanoGPT's rule: of the model, only dropout may change
    cfg.model = init->model->model_config();
    cfg.model.dropout = dropout;
  }
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  check_same_corpus(comm, corpus);
  if (init && !(corpus.tokenizer == init->tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) differs from the one of " + init->path + " (" +
                             std::to_string(init->tokenizer.vocab_size()) +
                             "); --init-from needs a text with exactly the model's characters");
  cfg.model.vocab_size = corpus.tokenizer.vocab_size();
  check_model(cfg);
  // Locked (by rank 0, which alone writes it) once the command line has proven sound, before
  // anything is written.
  std::optional<RunDir> run_dir;
  if (comm.is_root()) {
    run_dir.emplace(cfg.out_dir, cfg.overwrite ? RunDir::Mode::Overwrite : RunDir::Mode::Fresh);
    report_removed(*run_dir, out);
  }
  std::ostream null_out(nullptr);  // ranks other than 0 print nothing
  Run run(cfg, std::move(corpus), comm.is_root() ? out : null_out, comm);
  if (init) {  // every rank loaded the same file
    run.init_weights_from(*init->model);
    if (comm.is_root()) out << "initialized from " << init->path << "\n";
  }
  return run.run(/*fresh_metrics=*/true);
}

void check_iters_change(const TrainConfig& saved, int64_t new_iters, int64_t steps_taken, const std::string& dir) {
  if (new_iters < steps_taken)
    throw ConfigError("--iters " + std::to_string(new_iters) + ": the run in " + dir + " has already taken " +
                      std::to_string(steps_taken) + " steps");
  // The steps taken used the old schedule; a run given new_iters from the start would have
  // used the new one. Exact only if they agree on every step taken (bit for bit).
  const CosineSchedule old_s{saved.lr, saved.min_lr, saved.warmup, saved.iters};
  const CosineSchedule new_s{saved.lr, saved.min_lr, saved.warmup, new_iters};
  for (int64_t it = 0; it < steps_taken; ++it) {
    if (old_s.lr(it) == new_s.lr(it)) continue;
    char msg[700];
    std::snprintf(msg, sizeof msg,
                  "--iters %ld cannot continue the run in %s exactly: its step %ld used lr %.6g, but a run of %ld iters "
                  "would have used %.6g there (the cosine decay after the %ld warmup steps spans the whole run, so "
                  "only runs still within their warmup, or with --min-lr equal to --lr, can change --iters). To train "
                  "further with a new schedule, start a new run from its weights: attograd train --init-from %s",
                  static_cast<long>(new_iters), dir.c_str(), static_cast<long>(it), old_s.lr(it),
                  static_cast<long>(new_iters), new_s.lr(it), static_cast<long>(saved.warmup), dir.c_str());
    throw ConfigError(msg);
  }
}

TrainSummary resume_lm(const std::string& dir, const TrainConfig& now, const std::set<std::string>& given,
                       std::ostream& out) {
  Comm& comm = Comm::world();
  const std::string state_path = (fs::path(dir) / "train_state.safetensors").string();
  // Rank 0 locks the folder, reads the state and sends its bytes to every rank (the run folder
  // may exist on rank 0's machine only); each rank then parses and validates the same bytes.
  std::optional<RunDir> run_dir;
  std::string bytes;
  if (comm.is_root()) {
    RunDir::require_checkpoint(dir);
    run_dir.emplace(dir, RunDir::Mode::Resume);  // before reading: no other run may be writing it
    report_removed(*run_dir, out);
    bytes = read_input_file({state_path, state_path, memory_limit().bytes, "what this process may use", ""});
  }
  comm.broadcast(bytes);
  const SafeTensorsFile state = SafeTensorsFile::parse(std::move(bytes), state_path);
  LoadedTrainState st = read_train_state(state);
  TrainConfig cfg = resumed_config(st.config, now, given);
  cfg.out_dir = dir;  // the folder may have moved since
  check_config(cfg, comm);
  const bool iters_changed = cfg.iters != st.config.iters;
  if (iters_changed) check_iters_change(st.config, cfg.iters, st.pos.iter, dir);
  if (cfg.threads > 0 || comm.distributed()) parallel::set_num_threads(cfg.threads > 0 ? cfg.threads : comm.threads_per_rank());
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  check_same_corpus(comm, corpus);
  if (!(corpus.tokenizer == st.tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) does not match the train state's (" + std::to_string(st.tokenizer.vocab_size()) +
                             ") in " + state_path);
  check_model(cfg);
  if (iters_changed && comm.is_root()) {
    write_config_toml((fs::path(dir) / "config.toml").string(), cfg);  // the run's configuration is now this
    out << (cfg.iters > st.config.iters ? "extending" : "shortening") << " the run from " << st.config.iters << " to "
        << cfg.iters << " iters (" << st.pos.iter
        << " taken; the learning rates of those are the same under both schedules)\n";
  }
  std::ostream null_out(nullptr);
  Run run(cfg, std::move(corpus), comm.is_root() ? out : null_out, comm);
  run.resume_from(state, st.pos);
  return run.run(/*fresh_metrics=*/false);
}

TrainSummary resume_lm(const std::string& dir, const std::string& data_path, int threads, bool progress_bar,
                       std::ostream& out) {
  TrainConfig now;
  now.data_path = data_path;
  now.threads = threads;
  now.no_progress = !progress_bar;
  std::set<std::string> given;
  if (!data_path.empty()) given.insert("data");
  return resume_lm(dir, now, given, out);
}

}  // namespace ag::train
