// `attograd train --data FILE --out DIR [flags]`: trains a language model; defaults are
// nanoGPT's shakespeare_char CPU configuration. Every flag but --resume and --help comes from
// the run configuration's field table (train/run_config.h, through cli/train_flags.h): its
// name, help, default, and whether --resume accepts it.
#include <iostream>

#include "autograd/parallel.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "models/registry.h"
#include "train/config_error.h"
#include "train/trainer.h"

namespace ag::cli {

int cmd_train(int argc, char** argv) {
  cxxopts::Options options("attograd train", "Train a character-level language model on a text file (nanoGPT's CPU defaults).");
  add_train_flags(options);
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  const TrainFlags flags = read_train_flags(r);
  const int threads = flags.config.threads;
  if (threads < 0 || threads > parallel::kMaxThreads)
    throw UsageError("--threads must be in 0.." + std::to_string(parallel::kMaxThreads) + " (0: one per core), got " +
                     std::to_string(threads));

  if (r.count("resume")) {
    refuse_run_flags_on_resume(flags);
    if (flags.given.count("overwrite")) throw UsageError("--overwrite cannot be combined with --resume, which continues the run");
    const auto summary = train::resume_lm(r["resume"].as<std::string>(), flags.config, flags.given, std::cout);
    return summary.interrupted ? kInterruptedStatus : 0;
  }
  try {
    models::find_model(flags.config.model.name);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--model: ") + e.what());
  }
  if (flags.config.data_path.empty()) throw UsageError("--data FILE is required (or data = \"FILE\" in --config)");
  if (flags.config.out_dir.empty()) throw UsageError("--out DIR is required (or out = \"DIR\" in --config)");
  train::TrainSummary summary;
  try {
    summary = train::train_lm(flags.config, std::cout);
  } catch (const train::ConfigError& e) {  // the flags given cannot work: a usage error
    throw UsageError(e.what());
  }
  return summary.interrupted ? kInterruptedStatus : 0;
}

}  // namespace ag::cli
