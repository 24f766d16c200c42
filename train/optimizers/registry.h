// The optimizers `attograd train --optimizer NAME` can use, one row each. A row says how its
// optimizer is made for a model (its parameter groups from the model's parameter table,
// models/param_table.h), which settings of its own it reads (flags, config keys and saved
// fields, train/config/choice.h) and what the run's header says of it. The run knows only
// optim::Optimizer: it steps it, schedules each group from its initial_lr, and saves and
// restores it through its state dict (train/run_folder/train_state.h).
//
// Adding an optimizer: a file train/optimizers/NAME.cpp that defines its row, and one line in
// the list of registry.cpp (docs/architecture.md, "A new optimizer"); a program of its own adds
// the row with OptimizerRegistry::add.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "optim/optimizer.h"
#include "train/config/choice.h"

namespace ag::train {

struct TrainConfig;

struct OptimizerEntry {
  std::string name;  // --optimizer NAME
  std::string help;  // one line for --help
  std::vector<Setting> settings;
  // The optimizer over the model's parameters, at the configuration's settings. Each group's
  // lr is its peak: the schedule sets factor × initial_lr on every group. Throws
  // std::invalid_argument naming the flag for a model it cannot train.
  std::function<std::unique_ptr<optim::Optimizer>(const models::LanguageModel&, const TrainConfig&)> build;
  // What the run's header says of it ("muon (lr 0.05 for the hidden matrices, AdamW for the
  // rest)"); empty says nothing (nanoGPT's recipe).
  std::function<std::string(const TrainConfig&)> describe;
  // Sets the options a schedule moves besides the learning rate for step `it` (0-based), before
  // that step, in the groups' options as torch's code sets param_groups[i]["momentum"]: Muon's
  // momentum warmup. The state dict keeps them, and they depend on the step alone, so a resumed
  // run sets what the run that never stopped did. Empty: the options stay as built.
  std::function<void(optim::Optimizer&, const TrainConfig&, int64_t it)> before_step = {};
};

using OptimizerRegistry = Registry<OptimizerEntry>;
using OptimizerChoice = Choice<OptimizerEntry>;
template <>
std::vector<OptimizerEntry> OptimizerRegistry::builtin();

}  // namespace ag::train
