// The flags of `attograd train`, derived from the run configuration's field table
// (train/config/run_config.h): one flag per field with its help and default, plus --config (a TOML
// file of the same fields, train/config/config_file.h), --resume and --help. A field takes the flag
// given on the command line, else the --config file's value, else its default.
#pragma once
#include <set>
#include <string>

#include <cxxopts.hpp>

#include "train/config/run_config.h"

namespace ag::cli {

void add_train_flags(cxxopts::Options& options);

struct TrainFlags {
  train::TrainConfig config;    // every field: its flag's value, or the default
  std::set<std::string> given;      // the flags given on the command line
  std::set<std::string> from_file;  // the keys the --config file set
};
TrainFlags read_train_flags(const cxxopts::ParseResult& r);

// With --resume the saved configuration is the run: throws UsageError naming the first given
// flag whose field is OnResume::Refuse.
void refuse_run_flags_on_resume(const TrainFlags& flags);

// A model flag must mean something (throws UsageError naming the flag otherwise):
//   * with --init-from the model is the checkpoint's: of the model flags only --dropout may be
//     given (on the command line or in the --config file);
//   * else the chosen model must read it (models/registry.h: ModelEntry::fields), as --layers
//     means nothing to --model mlp. A --config file may hold such a key at its default: the
//     config.toml a run writes lists every field.
void refuse_model_flags_that_mean_nothing(const TrainFlags& flags);

}  // namespace ag::cli
