// The training run's parts: train::Step (the step `train` runs and `bench train` times), the
// loggers the loop emits events to (metrics.jsonl's checked writes, the console), and the peak
// MFU is measured against, kept per machine.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>

#include "autograd/ops.h"
#include "models/registry.h"
#include "tests/train/small_run.h"
#include "tests/test_util.h"
#include "train/logging/console_logger.h"
#include "train/logging/metrics_logger.h"
#include "tuning/kept.h"
#include "tuning/peak_flops.h"
#include "train/step.h"
#include "nn/utils/clip_grad.h"
#include "optim/adam.h"
#include "train/trainer.h"

namespace ag {
namespace {

namespace fs = std::filesystem;
using namespace testing_util;

std::unique_ptr<models::LanguageModel> tiny_gpt(uint64_t seed) {
  Generator g(seed);
  return models::make_model(models::GPTConfig{13, 2, 2, 16, 8, 0.0}, DType::Float32, g);
}

std::pair<Tensor, Tensor> batch_of(int64_t B, uint64_t seed) {
  Generator g(seed);
  return {Tensor::randint(0, 13, {B, 8}, g), Tensor::randint(0, 13, {B, 8}, g)};
}

std::vector<std::vector<double>> weights_of(const models::LanguageModel& m) {
  std::vector<std::vector<double>> w;
  for (const auto& [n, p] : m.named_parameters()) w.push_back(p.to_double_vector());
  return w;
}

// The step is exactly the textbook one: loss, backward, clip, AdamW.
TEST(Step, IsTheManualStepBitForBit) {
  auto a = tiny_gpt(1), b = tiny_gpt(1);
  a->train(), b->train();
  optim::AdamW opt_a(a->parameters(), {.lr = 1e-3}), opt_b(b->parameters(), {.lr = 1e-3});
  train::Step step(*a, opt_a, distributed::Comm::single(), {1, 0.5, false});
  for (int i = 0; i < 3; ++i) {
    const auto [x, y] = batch_of(4, 10 + i);
    opt_a.set_lr(0, 1e-3 * (i + 1));  // the rates are the optimizer's (a schedule's to set)
    const train::StepResult r = step.run(x, y, i);
    opt_b.set_lr(0, 1e-3 * (i + 1));
    opt_b.zero_grad();
    Tensor loss = b->loss(x, y);
    loss.backward();
    const double norm = nn::utils::clip_grad_norm_(b->parameters(), 0.5);
    opt_b.step();
    EXPECT_EQ(r.loss, loss.item());
    EXPECT_EQ(r.grad_norm, norm);
    EXPECT_TRUE(r.nonfinite.empty());
    EXPECT_FALSE(r.stop);
  }
  EXPECT_EQ(weights_of(*a), weights_of(*b));
}

// K micro-batches: the mean of their losses, and the gradient of the mean.
TEST(Step, MicroBatchesAverageLikeOneBatch) {
  auto a = tiny_gpt(2);
  a->train();
  optim::AdamW opt(a->parameters(), {.lr = 1e-3});
  train::Step step(*a, opt, distributed::Comm::single(), {2, 0.0, false});
  const auto [x, y] = batch_of(4, 3);
  const double half0 = a->loss(narrow(x, 0, 0, 2), narrow(y, 0, 0, 2)).item();
  const double half1 = a->loss(narrow(x, 0, 2, 2), narrow(y, 0, 2, 2)).item();
  const train::StepResult r = step.run(x, y, 0);
  EXPECT_EQ(r.loss, (half0 + half1) / 2);
  EXPECT_THROW(step.run(narrow(x, 0, 0, 3), narrow(y, 0, 0, 3), 1), std::invalid_argument);  // 3 rows, 2 micro-batches
}

// The norm clipping computes is non-finite exactly when a gradient is: then the update is
// skipped and the first bad parameter named (Inf: a norm of Inf; NaN: a norm of NaN).
TEST(Step, ANonFiniteGradientSkipsTheUpdateAndNamesTheFirstBadParameter) {
  for (double bad : {INFINITY, NAN}) {
    for (double clip : {1.0, 0.0}) {
      auto m = tiny_gpt(4);
      m->train();
      optim::AdamW opt(m->parameters(), {.lr = 1e-3});
      train::Step step(*m, opt, distributed::Comm::single(), {1, clip, false});
      const auto params = m->named_parameters();
      const std::string third = params[2].first;
      step.after_backward = [&](double) {
        params[4].second.grad().data<float>()[0] = static_cast<float>(bad);
        params[2].second.grad().data<float>()[1] = static_cast<float>(bad);
      };
      const auto before = weights_of(*m);
      const auto [x, y] = batch_of(4, 5);
      const train::StepResult r = step.run(x, y, 41);
      EXPECT_FALSE(std::isfinite(r.grad_norm));
      EXPECT_NE(r.nonfinite.find("non-finite gradient at iter 41"), std::string::npos) << r.nonfinite;
      EXPECT_NE(r.nonfinite.find("first non-finite gradient in " + third), std::string::npos) << r.nonfinite;
      EXPECT_EQ(weights_of(*m), before);
      for (const auto& [n, p] : params) EXPECT_FALSE(p.grad().defined() && p.grad().to_double_vector()[0] != 0) << n;
    }
  }
}

// metrics.jsonl: a failed write stops the run with the file's name, never a silent gap.
TEST(MetricsLogger, AFailedWriteThrowsNamingTheFile) {
  const fs::path d = temp_dir("metrics_write");
  const std::string path = (d / "metrics.jsonl").string();
  const auto model = tiny_gpt(1);
  train::TrainConfig cfg;
  data::Corpus corpus;
  const train::RunStart start{cfg, corpus, *model};
  train::MetricsLogger logger(path);
  logger.on_start(start);
  train::StepEnd e;
  e.iter = 1;
  logger.on_step(e);  // not a logged step: nothing written
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
  const rlimit none{0, old.rlim_max};
  setrlimit(RLIMIT_FSIZE, &none);
  e.logged = true;
  const std::string err = error_of([&] { logger.on_step(e); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(err.find(path + ": write failed: File too large"), std::string::npos) << err;
  EXPECT_NE(err.find("attograd train --resume " + d.string()), std::string::npos) << err;
}

// Opened as every appended file is (base/atomic_file.h's AppendFile): a symbolic link
// planted as metrics.jsonl is replaced by the run's file, its target never written.
TEST(MetricsLogger, NeverWritesThroughASymbolicLink) {
  const fs::path d = temp_dir("metrics_link");
  const fs::path outside = d / "outside.txt", metrics = d / "metrics.jsonl";
  std::ofstream(outside) << "keep\n";
  fs::create_symlink(outside, metrics);
  const auto model = tiny_gpt(1);
  train::TrainConfig cfg;
  data::Corpus corpus;
  train::MetricsLogger logger(metrics.string());
  logger.on_start(train::RunStart{cfg, corpus, *model});
  train::StepEnd e;
  e.iter = 1;
  e.logged = true;
  logger.on_step(e);
  EXPECT_EQ(read_bytes(outside), "keep\n");
  EXPECT_FALSE(fs::is_symlink(metrics));
  EXPECT_EQ(read_lines(metrics).size(), 1u);
}

// small_run (tests/train/small_run.h), 20 steps with an evaluation every 10.
train::TrainConfig short_run(const fs::path& dir, const std::string& name) {
  train::TrainConfig c = small_run(dir, name);
  c.iters = 20;
  c.eval_every = 10;
  return c;
}

std::vector<std::string> losses(const fs::path& run) {
  std::vector<std::string> out;
  for (const auto& l : read_lines(run / "metrics.jsonl")) {
    const auto j = nlohmann::json::parse(l);
    out.push_back(j["iter"].dump() + " " + j["train_loss"].dump() + " " + j["val_loss"].dump() + " " + j["grad_norm"].dump());
  }
  return out;
}

// The run itself: a file-size limit reached in the middle of metrics.jsonl (a full disk for
// this file) stops the run with its name; --resume then continues without a gap.
TEST(MetricsLogger, ARunStopsOnAFailedMetricsWriteAndResumesWithoutAGap) {
  const fs::path d = temp_dir("metrics_full");
  std::ostringstream log;
  const train::TrainConfig straight = short_run(d, "straight");
  train::train_lm(straight, log);
  const train::TrainConfig c = short_run(d, "cut");
  const fs::path metrics = fs::path(c.out_dir) / "metrics.jsonl";
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
  train::RunHooks hooks;
  hooks.after_step = [&](int64_t it) {
    if (it != 13) return;
    const rlimit small{static_cast<rlim_t>(fs::file_size(metrics) + 40), old.rlim_max};
    setrlimit(RLIMIT_FSIZE, &small);
  };
  const std::string err = error_of([&] { train::train_lm(c, log, hooks); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(err.find("metrics.jsonl: write failed: File too large"), std::string::npos) << err;
  EXPECT_NE(err.find("attograd train --resume " + c.out_dir), std::string::npos) << err;
  train::resume_lm(c.out_dir, "", 0, false, log);
  EXPECT_EQ(losses(c.out_dir), losses(straight.out_dir));
  EXPECT_EQ(losses(c.out_dir).size(), 20u + 3u);
}

// Measured once per machine, then read back: two runs use the same peak.
TEST(PeakFlops, MeasuredOnceThenKeptPerMachineAndKernel) {
  const fs::path d = temp_dir("peak_cache");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  const std::string path = (d / "attograd" / "peak_flops.json").string();
  EXPECT_EQ(tuning::kept_path(), path);
  const std::string key = tuning::this_machine().text();
  EXPECT_NE(key.find(" cores | openblas "), std::string::npos) << key;
  const tuning::PeakFlops first = tuning::kept_peak_flops(2);
  EXPECT_EQ(first.source, "measured now, kept in " + path);
  EXPECT_GT(first.per_thread_gflops, 0);
  EXPECT_EQ(first.gflops, 2 * first.per_thread_gflops);
  const tuning::PeakFlops second = tuning::kept_peak_flops(3);
  EXPECT_EQ(second.source, "kept in " + path);
  EXPECT_EQ(second.per_thread_gflops, first.per_thread_gflops);
  EXPECT_EQ(second.gflops, 3 * first.per_thread_gflops);
  // Another machine's entry (a shared home folder) is kept beside this one's.
  auto j = nlohmann::json::parse(read_bytes(path));
  j["Other CPU | 64 cores | openblas SkylakeX"] = {{"gflops_per_thread_cpu_time", 99.0}};
  std::ofstream(path) << j.dump();
  EXPECT_EQ(tuning::kept_peak_flops(1).per_thread_gflops, first.per_thread_gflops);
  // A damaged file is measured again and rewritten.
  std::ofstream(path) << "{not json";
  EXPECT_EQ(tuning::kept_peak_flops(1).source, "measured now, kept in " + path);
  EXPECT_TRUE(nlohmann::json::parse(read_bytes(path)).contains(key));
}

// Two runs on one machine print the same peak, so their MFU differ only by their speed.
TEST(PeakFlops, TwoRunsShowTheSamePeak) {
  const fs::path d = temp_dir("peak_runs");
  ScopedEnv xdg("XDG_CACHE_HOME", (d / "cache").c_str());
  std::ostringstream log1, log2;
  train::train_lm(short_run(d, "a"), log1);
  train::train_lm(short_run(d, "b"), log2);
  const std::regex peak("mfu: against an sgemm peak of ([0-9]+) GFLOP/s \\(([^)]*)\\)");
  std::smatch m1, m2;
  const std::string s1 = log1.str(), s2 = log2.str();
  ASSERT_TRUE(std::regex_search(s1, m1, peak)) << s1;
  ASSERT_TRUE(std::regex_search(s2, m2, peak)) << s2;
  EXPECT_EQ(m1[1], m2[1]);
  EXPECT_NE(m1[2].str().find("measured now, kept in"), std::string::npos);
  EXPECT_EQ(m2[2].str().rfind("kept in", 0), 0u) << m2[2];
  // Their MFU then differ only as their throughput does (timing is not judged here): MFU per
  // token/s, the model's FLOPs over the peak, is the same in both runs' metrics.
  auto mfu_per_throughput = [&](const std::string& name) {
    const auto j = nlohmann::json::parse(read_lines(d / name / "metrics.jsonl").back());
    return j["mfu"].get<double>() / j["tokens_per_s"].get<double>();
  };
  EXPECT_NEAR(mfu_per_throughput("a") / mfu_per_throughput("b"), 1.0, 1e-12);
}

// The console's log line: nanoGPT's fields, ms/step among them.
TEST(ConsoleLogger, TheLogLineShowsMsPerStep) {
  train::StepEnd e;
  e.iter = 10, e.iters = 2000, e.loss = 2.34567, e.lr = 1e-3, e.ms_per_step = 41.25, e.tokens_per_s = 18618, e.mfu = 0.0451;
  e.eta_s = 82;
  EXPECT_EQ(train::ConsoleLogger::log_line(e),
            "iter    10/2000  loss 2.3457  lr 1.000e-03  41.2 ms/step  18618 tok/s  mfu 4.5%  ETA 1m22s\n");
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

std::string source(const std::string& path) { return testing_util::read_bytes(std::string(ATTOGRAD_SOURCE_DIR) + "/" + path); }

// The house's rules for the loop (issue 24): run.cpp (the Run) is the loop only, and the terminal's
// escape codes live in the console logger alone.
TEST(House, TheTrainerIsTheLoopAndOnlyTheConsoleDrawsOnTheTerminal) {
  const std::string trainer = source("train/run.cpp");
  EXPECT_LE(std::count(trainer.begin(), trainer.end(), '\n'), 400);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(ATTOGRAD_SOURCE_DIR) + "/train")) {
    if (!entry.is_regular_file()) continue;  // optim/ itself; its files come next
    const std::string name = entry.path().filename().string();
    if (name == "console_logger.cpp" || name.rfind("progress.", 0) == 0) continue;  // the console's and its bar's
    const std::string text = testing_util::read_bytes(entry.path());
    EXPECT_EQ(text.find("\\033"), std::string::npos) << name << " writes an escape code";
    EXPECT_EQ(text.find("\"\\r"), std::string::npos) << name << " writes a carriage return";  // a parser may read '\r'
  }
  // No rank checks in the loop: the loggers are attached on rank 0 only.
  EXPECT_EQ(trainer.find("is_root"), std::string::npos);
}

// `bench train` times the trained step itself: train::Step, no backward or update of its own.
TEST(House, BenchTrainRunsTheTrainersStep) {
  const std::string file = source("cli/cmd_bench.cpp");
  const size_t begin = file.find("void bench_train(");
  ASSERT_NE(begin, std::string::npos);
  const std::string bench = file.substr(begin, file.find("\n}\n", begin) - begin);  // the function's body
  EXPECT_NE(bench.find("train::Step step("), std::string::npos);
  for (const char* own : {".backward(", "opt.step(", "clip_grad_norm", "zero_grad("})
    EXPECT_EQ(bench.find(own), std::string::npos) << "cmd_bench.cpp calls " << own << " itself";
}

}  // namespace
}  // namespace ag
