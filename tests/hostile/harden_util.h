// What the hardening tests (tests/hostile/test_hostile_files_flags_signals.cpp, tests/hostile/test_hostile_io_and_limits.cpp) share: a small
// corpus and the tiny run that trains on it in a moment.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include "models/gpt_config.h"
#include "train/config/run_config.h"

namespace ag::testing_util {

inline std::string write_corpus(const std::filesystem::path& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question " + std::to_string(i % 5) + "\n";
  const std::filesystem::path p = dir / "corpus.txt";
  std::ofstream(p) << text;
  return p.string();
}

inline train::TrainConfig tiny_run(const std::filesystem::path& dir, const std::string& name) {
  train::TrainConfig c;
  c.data_path = write_corpus(dir);
  c.out_dir = (dir / name).string();
  c.model = models::GPTConfig{0, 1, 2, 16, 16, 0.0};
  c.batch_size = 4;
  c.iters = 4;
  c.eval_every = 2;
  c.eval_iters = 1;
  c.sample_tokens = 0;
  c.no_progress = true;
  return c;
}

}  // namespace ag::testing_util
