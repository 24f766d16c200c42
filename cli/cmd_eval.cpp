// `attograd eval --checkpoint PATH --text-file FILE`: mean next-character cross-entropy of a
// text under the model. Windows start at 0, block, 2·block, ...; window i predicts
// t[i+1 : i+block+1] from t[i : i+block]; the last one is shorter. The mean is over every
// predicted character.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/precision_flags.h"
#include "data/batch.h"
#include "data/text_file.h"
#include "train/run_folder/checkpoint.h"
#include "train/interrupt.h"

namespace ag::cli {

int cmd_eval(int argc, char** argv) {
  cxxopts::Options options("attograd eval", "Mean next-character cross-entropy (nats and bits) of a text file.");
  options.add_options()("checkpoint", "run folder or its model.safetensors", cxxopts::value<std::string>())(
      "text-file", "UTF-8 text to score", cxxopts::value<std::string>())("h,help", "show this help");
  add_precision_flags(options);
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (!r.count("checkpoint")) throw UsageError("--checkpoint PATH is required");
  if (!r.count("text-file")) throw UsageError("--text-file FILE is required");
  const PrecisionFlags precision = read_precision_flags(r);
  const auto loaded = train::load_model(r["checkpoint"].as<std::string>());
  const std::string path = r["text-file"].as<std::string>();
  // A regular file of bounded size only: /dev/zero or a FIFO would be read forever.
  const std::string text = data::read_text_file(path, path);
  const auto ids = loaded.tokenizer.encode(std::string_view(text), path);
  if (ids.size() < 2) throw std::runtime_error(path + ": needs at least 2 characters to predict one");

  NoGradGuard no_grad;
  const int64_t block = loaded.model->block_size();
  // The header lines on stderr when not the default: standard output stays the two result lines.
  const std::string header = apply_precision_flags(precision, *loaded.model, block, tuning::GemmWork::Forward);
  if (precision.precision != Precision::FP32) std::fputs(header.c_str(), stderr);
  const AutocastGuard autocast(precision.precision);
  double total = 0;  // summed over predicted characters
  int64_t count = 0;
  train::InterruptGuard interrupts;  // a long text: Ctrl-C or SIGTERM stops between windows
  for (const auto& [start, len] : data::eval_windows(static_cast<int64_t>(ids.size()), block)) {
    if (train::InterruptGuard::requested()) {
      std::fprintf(stderr, "interrupted (signal %d) after %ld of %ld characters; no loss printed\n",
                   train::InterruptGuard::signal_number(), static_cast<long>(count), static_cast<long>(ids.size() - 1));
      return kInterruptedStatus;
    }
    std::vector<int64_t> x(ids.begin() + start, ids.begin() + start + len);
    std::vector<int64_t> y(ids.begin() + start + 1, ids.begin() + start + len + 1);
    const Tensor loss = loaded.model->loss(Tensor::from_vector(x, {1, len}), Tensor::from_vector(y, {1, len}));
    total += loss.item() * static_cast<double>(len);
    count += len;
  }
  const double nats = total / static_cast<double>(count);
  std::printf("loss %.6f\n", nats);
  std::printf("bits per character %.6f (%ld characters predicted, %s)\n", nats / std::log(2.0), static_cast<long>(count),
              loaded.path.c_str());
  return 0;
}

}  // namespace ag::cli
