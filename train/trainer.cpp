#include "train/trainer.h"

#include <cblas.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace ag::train {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string format_duration(double s) {
  char buf[32];
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", static_cast<long>(t / 3600), static_cast<long>(t % 3600 / 60));
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", static_cast<long>(t / 60), static_cast<long>(t % 60));
  return buf;
}

// Mean loss over n random batches of ids, in eval mode and without recording a graph.
double estimate_loss(models::TransformerLM& model, const std::vector<int64_t>& ids, int64_t batch, int64_t block,
                     int64_t n, Generator& gen) {
  NoGradGuard no_grad;
  model.eval();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto [x, y] = data::get_batch(ids, batch, block, gen);
    total += model.loss(x, y).item();
  }
  model.train();
  return total / static_cast<double>(n);
}

void check_config(const TrainConfig& c) {
  auto positive = [](double v, const char* name) {
    if (!(v > 0)) throw std::invalid_argument(std::string("train: --") + name + " must be positive");
  };
  positive(static_cast<double>(c.batch_size), "batch");
  positive(static_cast<double>(c.eval_every), "eval-every");
  positive(static_cast<double>(c.eval_iters), "eval-iters");
  positive(static_cast<double>(c.log_every), "log-every");
  positive(c.lr, "lr");
  if (c.iters < 0) throw std::invalid_argument("train: --iters must be ≥ 0");
  if (c.warmup < 0) throw std::invalid_argument("train: --warmup must be ≥ 0");
  if (!(c.min_lr >= 0)) throw std::invalid_argument("train: --min-lr must be ≥ 0");
  if (!(c.weight_decay >= 0)) throw std::invalid_argument("train: --weight-decay must be ≥ 0");
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
    throw std::invalid_argument("train: --beta1 and --beta2 must be in [0, 1)");
  if (!(c.grad_clip >= 0)) throw std::invalid_argument("train: --grad-clip must be ≥ 0 (0 disables it)");
  if (c.out_dir.empty()) throw std::invalid_argument("train: --out is required");
}
}  // namespace

TrainSummary train_lm(const TrainConfig& cfg_in, std::ostream& out) {
  TrainConfig cfg = cfg_in;
  check_config(cfg);
  if (cfg.threads > 0) openblas_set_num_threads(cfg.threads);
  const data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  cfg.model.vocab_size = corpus.tokenizer.vocab_size();
  cfg.model.validate();
  std::filesystem::create_directories(cfg.out_dir);

  // Separate streams: model init and dropout, training batches, evaluation batches. So
  // evaluating (or not) never changes the training run.
  Generator model_gen(cfg.seed), batch_gen(cfg.seed + 1), eval_gen(cfg.seed + 2);
  models::TransformerLM model(cfg.model, DType::Float32, model_gen);
  model.train();
  AdamW opt(model.named_parameters(), cfg.lr, cfg.beta1, cfg.beta2, 1e-8, cfg.weight_decay);
  const CosineSchedule sched{cfg.lr, cfg.min_lr, cfg.warmup, cfg.iters};

  const std::string model_path = (std::filesystem::path(cfg.out_dir) / "model.safetensors").string();
  std::ofstream metrics((std::filesystem::path(cfg.out_dir) / "metrics.jsonl").string(), std::ios::trunc);
  if (!metrics) throw std::runtime_error(cfg.out_dir + "/metrics.jsonl: cannot open for writing");
  const bool tty = cfg.progress_bar && isatty(STDOUT_FILENO) && &out == &std::cout;

  out << "attograd train: " << corpus.path << " (" << corpus.num_tokens() << " characters, vocab "
      << cfg.model.vocab_size << ", train " << corpus.train_ids.size() << ", val " << corpus.val_ids.size() << ")\n"
      << "model: " << cfg.model.n_layer << " layers, " << cfg.model.n_head << " heads, " << cfg.model.n_embd
      << " wide, block " << cfg.model.block_size << ", " << model.num_parameters() << " parameters\n"
      << "run: batch " << cfg.batch_size << ", " << cfg.iters << " iters, lr " << cfg.lr << " -> " << cfg.min_lr
      << ", warmup " << cfg.warmup << ", seed " << cfg.seed << ", out " << cfg.out_dir << "\n";
  out.flush();

  const auto t_start = Clock::now();
  const double tokens_per_step = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  auto t_log = Clock::now();
  int64_t steps_since_log = 0;
  double tokens_per_s = 0;
  TrainSummary summary;

  auto write_metrics = [&](int64_t it, double train_loss, const double* val_loss, double lr) {
    nlohmann::json j = {{"iter", it},         {"train_loss", train_loss}, {"val_loss", nullptr}, {"lr", lr},
                        {"tokens_per_s", tokens_per_s}, {"elapsed_s", seconds_since(t_start)}};
    if (val_loss) j["val_loss"] = *val_loss;
    metrics << j.dump() << "\n";
    metrics.flush();
  };

  for (int64_t it = 0;; ++it) {
    const double lr = sched.lr(std::min(it, cfg.iters));
    if (it % cfg.eval_every == 0 || it == cfg.iters) {
      const double tl = estimate_loss(model, corpus.train_ids, cfg.batch_size, cfg.model.block_size, cfg.eval_iters, eval_gen);
      const double vl = estimate_loss(model, corpus.val_ids, cfg.batch_size, cfg.model.block_size, cfg.eval_iters, eval_gen);
      summary.train_loss = tl;
      summary.val_loss = vl;
      write_metrics(it, tl, &vl, lr);
      save_model(model_path, model, corpus.tokenizer);
      char line[160];
      std::snprintf(line, sizeof line, "eval  iter %5ld  train %.4f  val %.4f  (%s)", static_cast<long>(it), tl, vl,
                    format_duration(seconds_since(t_start)).c_str());
      out << (tty ? "\r\033[K" : "") << line << "\n";
      out.flush();
      t_log = Clock::now();  // evaluation time is not training throughput
      steps_since_log = 0;
    }
    if (it == cfg.iters) break;

    opt.set_lr(lr);
    auto [x, y] = data::get_batch(corpus.train_ids, cfg.batch_size, cfg.model.block_size, batch_gen);
    Tensor loss = model.loss(x, y);
    const double loss_v = loss.item();
    opt.zero_grad();
    loss.backward();
    if (cfg.grad_clip > 0) clip_grad_norm(opt.params(), cfg.grad_clip);
    opt.step();
    ++steps_since_log;

    const bool log_now = (it + 1) % cfg.log_every == 0 || it + 1 == cfg.iters;
    if (log_now || tty) {
      const double dt = seconds_since(t_log);
      if (log_now && dt > 0) tokens_per_s = tokens_per_step * static_cast<double>(steps_since_log) / dt;
      const double done = static_cast<double>(it + 1), total = static_cast<double>(cfg.iters);
      const double eta = tokens_per_s > 0 ? (total - done) * tokens_per_step / tokens_per_s : 0;
      char line[200];
      if (tty) {
        const int width = 24, filled = static_cast<int>(width * done / total);
        std::snprintf(line, sizeof line, "\r\033[K[%s%s] %ld/%ld  loss %.4f  lr %.2e  %.0f tok/s  ETA %s",
                      std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), static_cast<long>(it + 1),
                      static_cast<long>(cfg.iters), loss_v, lr, tokens_per_s, format_duration(eta).c_str());
        out << line;
        out.flush();
      } else if (log_now) {
        std::snprintf(line, sizeof line, "iter %5ld/%ld  loss %.4f  lr %.3e  %.0f tok/s  ETA %s\n", static_cast<long>(it + 1),
                      static_cast<long>(cfg.iters), loss_v, lr, tokens_per_s, format_duration(eta).c_str());
        out << line;
        out.flush();
      }
      if (log_now) {
        write_metrics(it + 1, loss_v, nullptr, lr);
        t_log = Clock::now();
        steps_since_log = 0;
      }
    }
  }
  summary.iters = cfg.iters;
  summary.seconds = seconds_since(t_start);
  summary.tokens_per_s = tokens_per_s;
  out << "done: " << cfg.iters << " iters in " << format_duration(summary.seconds) << ", val loss "
      << summary.val_loss << ", model " << model_path << "\n";
  if (cfg.sample_tokens > 0) {
    Generator sample_gen(cfg.seed);
    model.eval();
    const int64_t nl = corpus.tokenizer.id_of(U'\n');
    const auto ids = model.generate({nl >= 0 ? nl : 0}, {cfg.sample_tokens, 0.8, 0, true}, sample_gen);
    summary.sample = corpus.tokenizer.decode(ids);
    out << "---- sample (temperature 0.8) ----" << summary.sample << "\n----\n";
  }
  return summary;
}

}  // namespace ag::train
