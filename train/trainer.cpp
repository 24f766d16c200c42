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

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "models/registry.h"
#include "train/checkpoint.h"
#include "train/config_file.h"
#include "train/grad_report.h"
#include "train/interrupt.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/train_state.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check_config(const TrainConfig& c) {
  auto positive = [](double v, const char* name) {
    if (!(v > 0)) throw std::invalid_argument(std::string("train: --") + name + " must be positive");
  };
  positive(static_cast<double>(c.batch_size), "batch");
  positive(static_cast<double>(c.eval_every), "eval-every");
  positive(static_cast<double>(c.eval_iters), "eval-iters");
  positive(static_cast<double>(c.log_every), "log-every");
  positive(c.lr, "lr");
  if (c.sample_every < 0) throw std::invalid_argument("train: --sample-every must be ≥ 0");
  if (c.iters < 0) throw std::invalid_argument("train: --iters must be ≥ 0");
  if (c.warmup < 0) throw std::invalid_argument("train: --warmup must be ≥ 0");
  if (!(c.min_lr >= 0)) throw std::invalid_argument("train: --min-lr must be ≥ 0");
  if (!(c.weight_decay >= 0)) throw std::invalid_argument("train: --weight-decay must be ≥ 0");
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
    throw std::invalid_argument("train: --beta1 and --beta2 must be in [0, 1)");
  if (!(c.grad_clip >= 0)) throw std::invalid_argument("train: --grad-clip must be ≥ 0 (0 disables it)");
  if (c.out_dir.empty()) throw std::invalid_argument("train: --out is required");
  if (c.tensorboard && c.loggers.empty())  // never silently without the logs asked for
    throw std::invalid_argument("train: tensorboard is set but no writer is attached (tensorboard/train_logger.h)");
  models::find_model(c.model.name);  // throws for an unknown --model, listing the known ones
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
// accounted for); later lines belong to steps that will be run again.
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
  std::ofstream(path, std::ios::trunc) << kept;
}

// One training run, new or resumed. Owns everything that an exact resume must restore.
class Run {
 public:
  Run(const TrainConfig& cfg, data::Corpus corpus, std::ostream& out)
      : cfg_(cfg),
        corpus_(std::move(corpus)),
        out_(out),
        model_gen_(cfg.seed),
        batch_gen_(cfg.seed + 1),
        eval_gen_(cfg.seed + 2),
        model_(models::make_model(cfg.model, DType::Float32, model_gen_)),
        opt_(model_->named_parameters(), cfg.lr, cfg.beta1, cfg.beta2, 1e-8, cfg.weight_decay),
        sched_{cfg.lr, cfg.min_lr, cfg.warmup, cfg.iters},
        dir_(cfg.out_dir) {
    model_->train();
  }

  // --init-from: the weights of a trained model of the same configuration (fine-tuning).
  void init_weights_from(const models::LanguageModel& trained) {
    std::map<std::string, Tensor> weights;
    for (const auto& [name, p] : trained.named_parameters()) weights[name] = p.detach();
    model_->load_state_dict(weights);
  }

  void resume_from(const std::string& state_path, const RunPosition& pos) {
    restore_train_state(state_path, *model_, opt_);
    pos_ = pos;
    model_gen_.set_state(pos.rng_model);
    batch_gen_.set_state(pos.rng_batch);
    eval_gen_.set_state(pos.rng_eval);
    // The clock and the last evaluation carry on from where the run stopped.
    t_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(pos.elapsed_s));
    summary_.train_loss = pos.last_train_loss;
    summary_.val_loss = pos.last_val_loss;
  }

  // The loop: at each evaluation point evaluate and checkpoint; otherwise step, then log.
  TrainSummary run(bool fresh_metrics);

 private:
  void start(bool fresh_metrics);                  // open metrics.jsonl, print the run's header
  void evaluate_and_checkpoint(int64_t it, double lr);
  double step(int64_t it, double lr);              // one update (or a skipped one); returns the loss
  void log_step(int64_t it, double loss, double lr);
  TrainSummary stop_interrupted();                 // after a SIGINT/SIGTERM: checkpoint, say how to resume
  TrainSummary finish();                           // the last line and the sample
  double estimate_loss(const std::vector<int64_t>& ids);
  std::string sample_text(int64_t tokens);         // from a newline, temperature 0.8, its own generator
  void write_metrics(int64_t it, double train_loss, const double* val_loss, double lr);
  void save_checkpoint(bool new_best);
  void write_grad_report(int64_t it, bool tty);
  std::string path(const char* name) const { return (dir_ / name).string(); }

  TrainConfig cfg_;
  data::Corpus corpus_;
  std::ostream& out_;
  Generator model_gen_, batch_gen_, eval_gen_;  // init + dropout, training batches, evaluation batches
  std::unique_ptr<models::LanguageModel> model_;
  AdamW opt_;
  CosineSchedule sched_;
  RunPosition pos_;
  fs::path dir_;
  std::ofstream metrics_;
  Clock::time_point t_start_ = Clock::now();
  double tokens_per_s_ = 0;
  bool tty_ = false;  // a progress bar on a terminal instead of log lines
  TrainSummary summary_;
  Clock::time_point t_log_;  // throughput since the last log line (evaluations excluded)
  int64_t steps_since_log_ = 0;
  double grad_norm_ = 0;  // of the last step, before clipping (NaN when its update was skipped)
  // The gradient report taken after the backward of step pending_report_iter_ - 1, for the
  // evaluation at pending_report_iter_.
  std::string pending_report_;
  std::string pending_summary_;
  int64_t pending_report_iter_ = -1;
};

// Mean loss over eval_iters random batches, in eval mode and without recording a graph. Uses
// its own generator, so evaluating never changes the training batches.
double Run::estimate_loss(const std::vector<int64_t>& ids) {
  NoGradGuard no_grad;
  model_->eval();
  double total = 0;
  for (int64_t i = 0; i < cfg_.eval_iters; ++i) {
    auto [x, y] = data::get_batch(ids, cfg_.batch_size, cfg_.model.block_size, eval_gen_);
    total += model_->loss(x, y).item();
  }
  model_->train();
  return total / static_cast<double>(cfg_.eval_iters);
}

void Run::write_metrics(int64_t it, double train_loss, const double* val_loss, double lr) {
  nlohmann::json j = {{"iter", it}, {"train_loss", train_loss}, {"val_loss", nullptr}, {"lr", lr},
                      {"tokens_per_s", tokens_per_s_}, {"elapsed_s", seconds_since(t_start_)}};
  if (val_loss) j["val_loss"] = *val_loss;
  metrics_ << j.dump() << "\n";
  metrics_.flush();
}

// Writes the train state first (self-contained), then the model, then the best model. Each
// file is replaced atomically, so a crash at any moment leaves the previous good one.
void Run::save_checkpoint(bool new_best) {
  pos_.rng_model = model_gen_.state();
  pos_.rng_batch = batch_gen_.state();
  pos_.rng_eval = eval_gen_.state();
  pos_.elapsed_s = seconds_since(t_start_);
  save_train_state(path("train_state.safetensors"), cfg_, *model_, opt_, pos_, corpus_.tokenizer);
  save_model(path("model.safetensors"), *model_, corpus_.tokenizer);
  if (new_best) save_model(path("model.best.safetensors"), *model_, corpus_.tokenizer);
}

void Run::write_grad_report(int64_t it, bool tty) {
  if (pending_report_iter_ != it) return;  // no step ran before this evaluation (iter 0, or just resumed)
  const std::string name = "grad_report_iter" + std::to_string(it) + ".txt";
  std::ofstream f(dir_ / name, std::ios::trunc);
  f << pending_report_;
  if (!f.flush()) throw std::runtime_error(path(name.c_str()) + ": cannot write the gradient report");
  out_ << (tty ? "\r\033[K" : "") << "grads iter " << it << "  " << pending_summary_ << "  (" << name << ")\n";
  out_.flush();
  pending_report_iter_ = -1;
}

void Run::start(bool fresh_metrics) {
  fs::create_directories(dir_);
  const fs::path metrics_path = dir_ / "metrics.jsonl";
  if (fresh_metrics) {
    std::ofstream(metrics_path, std::ios::trunc);
    write_config_toml(path("config.toml"), cfg_);  // the run's configuration, resolved and readable
  }
  else truncate_metrics(metrics_path, pos_.iter);
  metrics_.open(metrics_path, std::ios::app);
  if (!metrics_) throw std::runtime_error(metrics_path.string() + ": cannot open for writing");
  tty_ = !cfg_.no_progress && isatty(STDOUT_FILENO) && &out_ == &std::cout;

  out_ << "attograd train: " << corpus_.path << " (" << corpus_.num_tokens() << " characters, vocab "
       << cfg_.model.vocab_size << ", train " << corpus_.train_ids.size() << ", val " << corpus_.val_ids.size() << ")\n"
       << "model: " << model_->summary() << ", " << model_->num_parameters() << " parameters\n"
       << "run: batch " << cfg_.batch_size << ", " << cfg_.iters << " iters, lr " << cfg_.lr << " -> " << cfg_.min_lr
       << ", warmup " << cfg_.warmup << ", seed " << cfg_.seed << ", out " << dir_.string() << "\n";
  if (pos_.iter > 0) out_ << "resuming at iter " << pos_.iter << "\n";
  out_.flush();
  for (const auto& l : cfg_.loggers) l->on_start(cfg_, corpus_, *model_, pos_.iter);
  t_log_ = Clock::now();
}

TrainSummary Run::run(bool fresh_metrics) {
  start(fresh_metrics);
  InterruptGuard interrupts;
  for (int64_t& it = pos_.iter;; ++it) {
    const double lr = sched_.lr(it);
    if ((it % cfg_.eval_every == 0 || it == cfg_.iters) && !pos_.eval_done) evaluate_and_checkpoint(it, lr);
    if (it == cfg_.iters) break;
    const double loss = step(it, lr);
    log_step(it, loss, lr);
    if (cfg_.sample_every > 0 && (it + 1) % cfg_.sample_every == 0 && it + 1 != cfg_.iters) {
      out_ << (tty_ ? "\r\033[K" : "") << "---- sample at iter " << it + 1 << " ----" << sample_text(100) << "\n----\n";
      out_.flush();
    }
    if (InterruptGuard::requested()) {
      ++it;  // this step is complete: the run continues at the next one
      return stop_interrupted();
    }
  }
  return finish();
}

void Run::evaluate_and_checkpoint(int64_t it, double lr) {
  const double tl = estimate_loss(corpus_.train_ids), vl = estimate_loss(corpus_.val_ids);
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
}

double Run::step(int64_t it, double lr) {
  opt_.set_lr(lr);
  auto [x, y] = data::get_batch(corpus_.train_ids, cfg_.batch_size, cfg_.model.block_size, batch_gen_);
  std::optional<DetectAnomalyGuard> anomaly;  // --detect-anomaly: over this step's forward and backward
  std::optional<AnomalyScope> anomaly_step;
  if (cfg_.detect_anomaly) anomaly.emplace(), anomaly_step.emplace("training step " + std::to_string(it));
  Tensor loss = model_->loss(x, y);
  const double loss_v = loss.item();
  opt_.zero_grad();
  loss.backward();
  anomaly_step.reset();
  anomaly.reset();
  if (cfg_.after_backward) cfg_.after_backward(*model_);
  if (cfg_.grad_report && ((it + 1) % cfg_.eval_every == 0 || it + 1 == cfg_.iters)) {
    const GradReport rep = grad_report(opt_.params());
    char head[200];
    std::snprintf(head, sizeof head, "gradients of step %ld (the last before the evaluation at iter %ld), before clipping; loss %.4f\n\n",
                  static_cast<long>(it), static_cast<long>(it + 1), loss_v);
    pending_report_ = head + format_grad_report(rep);
    pending_summary_ = grad_report_summary(rep);
    pending_report_iter_ = it + 1;
  }
  grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  const std::string bad = std::isfinite(loss_v) ? first_nonfinite_grad(opt_.params()) : "(the loss itself)";
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
    grad_norm_ = clip_grad_norm(opt_.params(), cfg_.grad_clip > 0 ? cfg_.grad_clip : std::numeric_limits<double>::infinity());
    opt_.step();
  }
  pos_.eval_done = false;
  ++steps_since_log_;
  if (cfg_.after_step) cfg_.after_step(it);
  return loss_v;
}

void Run::log_step(int64_t it, double loss_v, double lr) {
  const bool log_now = (it + 1) % cfg_.log_every == 0 || it + 1 == cfg_.iters;
  if (!log_now && !tty_) return;
  const double tokens_per_step = static_cast<double>(cfg_.batch_size * cfg_.model.block_size);
  const double dt = seconds_since(t_log_);
  if (log_now && dt > 0) tokens_per_s_ = tokens_per_step * static_cast<double>(steps_since_log_) / dt;
  const double done = static_cast<double>(it + 1), total = static_cast<double>(cfg_.iters);
  const double eta = tokens_per_s_ > 0 ? (total - done) * tokens_per_step / tokens_per_s_ : 0;
  char line[200];
  if (tty_) {
    // The rate since the last logged step (at a logged step, tokens_per_s_ itself), so that
    // tokens/s and the ETA show from the first step on.
    const double rate = dt > 0 ? tokens_per_step * static_cast<double>(steps_since_log_) / dt : tokens_per_s_;
    const double eta_now = rate > 0 ? (total - done) * tokens_per_step / rate : 0;
    out_ << "\r\033[K" << progress_line({it + 1, cfg_.iters, loss_v, lr, rate, eta_now}, terminal_columns(STDOUT_FILENO));
  } else {
    std::snprintf(line, sizeof line, "iter %5ld/%ld  loss %.4f  lr %.3e  %.0f tok/s  ETA %s\n", static_cast<long>(it + 1),
                  static_cast<long>(cfg_.iters), loss_v, lr, tokens_per_s_, format_duration(eta).c_str());
    out_ << line;
  }
  out_.flush();
  if (log_now) {
    write_metrics(it + 1, loss_v, nullptr, lr);
    for (const auto& l : cfg_.loggers) l->on_log({it + 1, loss_v, lr, grad_norm_, tokens_per_s_});
    t_log_ = Clock::now();
    steps_since_log_ = 0;
  }
}

TrainSummary Run::stop_interrupted() {
  save_checkpoint(false);
  out_ << (tty_ ? "\r\033[K" : "") << "\ninterrupted (signal " << InterruptGuard::signal_number() << ") after iter "
       << pos_.iter << "; checkpoint written to " << dir_.string() << "\nresume with: attograd train --resume "
       << dir_.string() << "\n";
  out_.flush();
  summary_.interrupted = true;
  summary_.iters = pos_.iter;
  summary_.skipped_updates = pos_.skipped_updates;
  return summary_;
}

TrainSummary Run::finish() {
  TrainSummary& summary = summary_;
  summary.iters = cfg_.iters;
  summary.seconds = seconds_since(t_start_);
  summary.tokens_per_s = tokens_per_s_;
  summary.skipped_updates = pos_.skipped_updates;
  out_ << "done: " << cfg_.iters << " iters in " << format_duration(summary.seconds) << ", val loss " << summary.val_loss
       << ", model " << path("model.safetensors");
  if (pos_.skipped_updates) out_ << ", " << pos_.skipped_updates << " updates skipped (non-finite)";
  out_ << "\n";
  if (cfg_.sample_tokens > 0) {
    summary.sample = sample_text(cfg_.sample_tokens);
    out_ << "---- sample (temperature 0.8) ----" << summary.sample << "\n----\n";
  }
  return summary;
}

std::string Run::sample_text(int64_t tokens) {
  // A generator of its own, seeded alike each time: sampling never moves the run's streams.
  Generator sample_gen(cfg_.seed);
  model_->eval();
  const int64_t nl = corpus_.tokenizer.id_of(U'\n');
  const auto ids = model_->generate({nl >= 0 ? nl : 0}, {tokens, 0.8, 0, true}, sample_gen);
  model_->train();
  return corpus_.tokenizer.decode(ids);
}
}  // namespace

TrainSummary train_lm(const TrainConfig& cfg_in, std::ostream& out) {
  TrainConfig cfg = cfg_in;
  check_config(cfg);
  if (cfg.threads > 0) parallel::set_num_threads(cfg.threads);
  std::optional<LoadedModel> init;
  if (!cfg.init_from.empty()) {  // the model and its vocabulary come from the checkpoint
    init = load_model(cfg.init_from);
    const double dropout = cfg.model.dropout;  // nanoGPT's rule: of the model, only dropout may change
    cfg.model = init->model->model_config();
    cfg.model.dropout = dropout;
  }
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  if (init && !(corpus.tokenizer == init->tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) differs from the one of " + init->path + " (" +
                             std::to_string(init->tokenizer.vocab_size()) +
                             "); --init-from needs a text with exactly the model's characters");
  cfg.model.vocab_size = corpus.tokenizer.vocab_size();
  models::find_model(cfg.model.name).validate(cfg.model);
  Run run(cfg, std::move(corpus), out);
  if (init) {
    run.init_weights_from(*init->model);
    out << "initialized from " << init->path << "\n";
  }
  return run.run(/*fresh_metrics=*/true);
}

void check_iters_change(const TrainConfig& saved, int64_t new_iters, int64_t steps_taken, const std::string& dir) {
  if (new_iters < steps_taken)
    throw std::invalid_argument("--iters " + std::to_string(new_iters) + ": the run in " + dir + " has already taken " +
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
    throw std::invalid_argument(msg);
  }
}

TrainSummary resume_lm(const std::string& dir, const TrainConfig& now, const std::set<std::string>& given,
                       std::ostream& out) {
  const std::string state_path = (fs::path(dir) / "train_state.safetensors").string();
  if (!fs::exists(state_path))
    throw std::runtime_error(state_path + ": not found; --resume needs a run folder written by attograd train");
  LoadedTrainState st = read_train_state(state_path);
  TrainConfig cfg = resumed_config(st.config, now, given);
  cfg.out_dir = dir;  // the folder may have moved since
  check_config(cfg);
  const bool iters_changed = cfg.iters != st.config.iters;
  if (iters_changed) check_iters_change(st.config, cfg.iters, st.pos.iter, dir);
  if (cfg.threads > 0) parallel::set_num_threads(cfg.threads);
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  if (!(corpus.tokenizer == st.tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) does not match the train state's (" + std::to_string(st.tokenizer.vocab_size()) +
                             ") in " + state_path);
  if (iters_changed) {
    write_config_toml((fs::path(dir) / "config.toml").string(), cfg);  // the run's configuration is now this
    out << "extending the run from " << st.config.iters << " to " << cfg.iters << " iters (" << st.pos.iter
        << " taken; the learning rates of those are the same under both schedules)\n";
  }
  Run run(cfg, std::move(corpus), out);
  run.resume_from(state_path, st.pos);
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
