// A small training run shared by the test files: a repetitive corpus, and a one-layer GPT
// (with dropout, so that its generator is exercised) trained on it for 300 steps; and the test
// that a run cut by Ctrl-C resumes to the same bits.
#pragma once
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "train/config/run_config.h"
#include "train/trainer.h"

namespace ag::testing_util {

// dir/corpus.txt: 200 lines of "to be or not to be, that is the question <i % 5>", then extra.
inline std::string corpus(const std::filesystem::path& dir, const std::string& extra = "") {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question " + std::to_string(i % 5) + "\n";
  const std::filesystem::path p = dir / "corpus.txt";
  std::ofstream(p) << text << extra;
  return p.string();
}

inline train::TrainConfig small_run(const std::filesystem::path& dir, const std::string& name) {
  train::TrainConfig c;
  c.data_path = corpus(dir);
  c.out_dir = (dir / name).string();
  c.model = models::GPTConfig{0, 1, 2, 16, 16, 0.1};  // with dropout: its generator must resume too
  c.batch_size = 4;
  c.iters = 300;
  c.warmup = 20;
  c.eval_every = 100;
  c.eval_iters = 2;
  c.log_every = 1;
  c.sample_tokens = 0;
  c.no_progress = true;
  return c;
}

// (iter, train_loss, val_loss) of every line of run/metrics.jsonl, as exact JSON text: two runs
// that agree bit for bit give equal vectors.
inline std::vector<std::string> losses(const std::filesystem::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    const auto j = nlohmann::json::parse(l);
    out.push_back(j["iter"].dump() + " " + j["train_loss"].dump() + " " + j["val_loss"].dump());
  }
  return out;
}

// Hooks that stop a run as a user's Ctrl-C does: a real SIGINT right after step k, after what
// hooks' own after_step does (a fake clock's tick).
inline train::RunHooks interrupt_after(int64_t k, train::RunHooks hooks = {}) {
  hooks.after_step = [k, then = std::move(hooks.after_step)](int64_t it) {
    if (then) then(it);
    if (it == k) std::raise(SIGINT);
  };
  return hooks;
}

// Trains c cut by a SIGINT after step k, resumes it to its end, and expects what the
// uninterrupted run `straight` left: the same model bytes and the same logged losses.
inline void expect_cut_run_resumes_exactly(const train::TrainConfig& c, int64_t k, const std::filesystem::path& straight,
                                           std::ostream& log) {
  SCOPED_TRACE("interrupted after iter " + std::to_string(k));
  EXPECT_TRUE(train::train_lm(c, log, interrupt_after(k)).interrupted);
  EXPECT_FALSE(train::resume_lm(c.out_dir, "", 0, false, log).interrupted);
  EXPECT_EQ(read_bytes(std::filesystem::path(c.out_dir) / "model.safetensors"), read_bytes(straight / "model.safetensors"));
  EXPECT_EQ(losses(c.out_dir), losses(straight));
}

}  // namespace ag::testing_util
