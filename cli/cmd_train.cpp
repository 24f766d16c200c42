// `attograd train --data FILE --out DIR [flags]`: trains a language model; defaults are
// nanoGPT's shakespeare_char CPU configuration. Every flag but --resume and --help comes from
// the run configuration's field table (train/run_config.h, through cli/train_flags.h): its
// name, help, default, and whether --resume accepts it.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/train_flags.h"
#include "tensorboard/train_logger.h"
#include "train/config_error.h"
#include "train/distributed.h"
#include "train/trainer.h"

namespace ag::cli {

namespace {
// --tensorboard: the writer lives in a library of its own (protobuf stays out of the training
// library), so the program attaches it (the run uses it on rank 0 only). It observes only, so a
// resumed run may add or drop it.
train::RunHooks hooks_for(const train::TrainConfig& c, const std::string& run_dir) {
  train::RunHooks hooks;
  if (c.tensorboard)
    hooks.loggers.push_back(std::make_shared<tensorboard::TrainLogger>((std::filesystem::path(run_dir) / "tb").string(), &std::cout));
  return hooks;
}

// A configuration that cannot work is a usage error (exit status 2), whether it came from the
// flags, the --config file or, with --resume, the saved run.
template <class F>
train::TrainSummary as_usage_errors(F run) {
  try {
    return run();
  } catch (const train::ConfigError& e) {
    throw UsageError(e.what());
  }
}

int train_command(int argc, char** argv) {
  cxxopts::Options options("attograd train", "Train a character-level language model on a text file (nanoGPT's CPU defaults).");
  add_train_flags(options);
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  TrainFlags flags = read_train_flags(r);
  train::TrainSummary summary;
  if (r.count("resume")) {
    refuse_run_flags_on_resume(flags);
    if (flags.given.count("overwrite")) throw UsageError("--overwrite cannot be combined with --resume, which continues the run");
    const std::string dir = r["resume"].as<std::string>();
    summary = as_usage_errors([&] { return train::resume_lm(dir, flags.config, flags.given, std::cout, hooks_for(flags.config, dir)); });
  } else {
    refuse_model_flags_that_mean_nothing(flags);
    summary = as_usage_errors([&] { return train::train_lm(flags.config, std::cout, hooks_for(flags.config, flags.config.out_dir)); });
  }
  return summary.interrupted ? kInterruptedStatus : 0;
}
}  // namespace

// Under mpirun, an error on one rank ends the whole job (naming the rank) instead of leaving
// the others waiting in a collective.
int cmd_train(int argc, char** argv) {
  return train::run_or_abort_job("train", [&] { return train_command(argc, argv); });
}

}  // namespace ag::cli
