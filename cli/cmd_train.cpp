// `attograd train --data FILE --out DIR [flags]`: trains a language model; defaults are
// nanoGPT's shakespeare_char CPU configuration. Every flag but --resume and --help comes from
// the run configuration's field table (train/config/run_config.h, through cli/train_flags.h): its
// name, help, default, and whether --resume accepts it.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/train_flags.h"
#include "tensorboard/train_logger.h"
#include "train/config/config_error.h"
#include "distributed/comm.h"
#include "train/interrupt.h"
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

// The exit status of a run that returned. When standard output failed meanwhile, the run's
// last words (how to resume) went nowhere: they are said on stderr. A closed pipe (its reader
// exited, as `| head` does, or `| tee` on Ctrl-C) is a stop like a signal (130); any other
// failure to write it (a full disk) is an error (1).
int stop_status(const train::TrainSummary& summary, const std::string& dir) {
  if (!train::InterruptGuard::output_failed() || !distributed::Comm::world().is_root())
    return summary.interrupted ? kInterruptedStatus : 0;
  const std::string where = (summary.interrupted ? "stopped after iter " : "finished at iter ") +
                            std::to_string(summary.iters) + "; its checkpoint is in " + dir +
                            (summary.interrupted ? "; resume with: attograd train --resume " + dir : std::string());
  if (!train::InterruptGuard::output_closed_pipe())
    throw std::runtime_error("standard output: cannot write (a full disk, or the terminal is gone); the run " + where);
  std::cerr << "attograd train: the run " << where << "\n";
  return kInterruptedStatus;
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
    return stop_status(summary, dir);
  }
  refuse_model_flags_that_mean_nothing(flags);
  summary = as_usage_errors([&] { return train::train_lm(flags.config, std::cout, hooks_for(flags.config, flags.config.out_dir)); });
  return stop_status(summary, flags.config.out_dir);
}
}  // namespace

// Under mpirun, an error on one rank ends the whole job (naming the rank) instead of leaving
// the others waiting in a collective.
int cmd_train(int argc, char** argv) {
  return distributed::run_or_abort_job("train", [&] { return train_command(argc, argv); });
}

}  // namespace ag::cli
