// `attograd train --data FILE --out DIR [flags]`: trains a language model; defaults are
// nanoGPT's shakespeare_char CPU configuration. Every flag but --resume and --help comes from
// the run configuration's field table (train/run_config.h, through cli/train_flags.h): its
// name, help, default, and whether --resume accepts it.
#include <filesystem>
#include <iostream>
#include <memory>

#include "autograd/parallel.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "models/registry.h"
#include "tensorboard/train_logger.h"
#include "train/config_error.h"
#include "train/distributed.h"
#include "train/interrupt.h"
#include "train/trainer.h"

namespace ag::cli {

namespace {
// --tensorboard: the writer lives in a library of its own (protobuf stays out of the training
// library), so the program attaches it. It observes only, so a resumed run may add or drop it.
void attach_tensorboard(train::TrainConfig& c, const std::string& run_dir) {
  if (!c.tensorboard || !train::Comm::world().is_root()) return;  // rank 0 alone writes files
  c.loggers.push_back(std::make_shared<tensorboard::TrainLogger>((std::filesystem::path(run_dir) / "tb").string(), &std::cout));
}

// The exit status of a run that returned. When standard output failed meanwhile, the run's
// last words (how to resume) went nowhere: they are said on stderr. A closed pipe (its reader
// exited, as `| head` does, or `| tee` on Ctrl-C) is a stop like a signal (130); any other
// failure to write it (a full disk) is an error (1).
int stop_status(const train::TrainSummary& summary, const std::string& dir) {
  if (!train::InterruptGuard::output_failed() || !train::Comm::world().is_root())
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
  const int threads = flags.config.threads;
  if (threads < 0 || threads > parallel::kMaxThreads)
    throw UsageError("--threads must be in 0.." + std::to_string(parallel::kMaxThreads) + " (0: one per core), got " +
                     std::to_string(threads));

  if (r.count("resume")) {
    refuse_run_flags_on_resume(flags);
    if (flags.given.count("overwrite")) throw UsageError("--overwrite cannot be combined with --resume, which continues the run");
    const std::string dir = r["resume"].as<std::string>();
    attach_tensorboard(flags.config, dir);
    train::TrainSummary summary;
    try {
      summary = train::resume_lm(dir, flags.config, flags.given, std::cout);
    } catch (const train::ConfigError& e) {  // as for a new run: a flag that cannot work is a usage error
      throw UsageError(e.what());
    }
    return stop_status(summary, dir);
  }
  if (!flags.config.init_from.empty()) {
    // The model is the checkpoint's: a shape flag (or config key) would silently mean nothing.
#define AG_REFUSE_WITH_INIT_FROM(type, member, flag, def, help)                                                    \
    if (std::string(flag) != "dropout" && (flags.given.count(flag) || flags.from_file.count(flag)))             \
      throw UsageError(std::string("--") + flag + " cannot be combined with --init-from: the model comes from the checkpoint");
    AG_MODEL_FIELDS(AG_REFUSE_WITH_INIT_FROM)
#undef AG_REFUSE_WITH_INIT_FROM
  }
  try {
    models::find_model(flags.config.model.name);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--model: ") + e.what());
  }
  if (flags.config.data_path.empty()) throw UsageError("--data FILE is required (or data = \"FILE\" in --config)");
  if (flags.config.out_dir.empty()) throw UsageError("--out DIR is required (or out = \"DIR\" in --config)");
  attach_tensorboard(flags.config, flags.config.out_dir);
  train::TrainSummary summary;
  try {
    summary = train::train_lm(flags.config, std::cout);
  } catch (const train::ConfigError& e) {  // the flags given cannot work: a usage error
    throw UsageError(e.what());
  }
  return stop_status(summary, flags.config.out_dir);
}
}  // namespace

// Under mpirun, an error on one rank ends the whole job (naming the rank) instead of leaving
// the others waiting in a collective.
int cmd_train(int argc, char** argv) {
  return train::run_or_abort_job("train", [&] { return train_command(argc, argv); });
}

}  // namespace ag::cli
