// train_state.safetensors: everything `attograd train --resume DIR` needs to continue a run
// exactly as if it had never stopped. It is self-contained (it holds the weights as well), so
// a crash between writing it and writing model.safetensors can never pair mismatched files.
//
//   tensors     model.<name> (F32): the weights;
//               optimizer.state.<i>.<key>: the optimizer's state dict's per-parameter state,
//               whatever the optimizer (optim/state_dict.h: parameter i over all groups in
//               order, torch's keys: "step" (0-d), "exp_avg", "momentum_buffer", ...)
//   __metadata__ format, iter (next iteration to run), eval_done (the evaluation of `iter`
//               already happened), best_val_loss, skipped_updates, rng.model / rng.batch /
//               rng.eval (generator states), config (JSON), vocab (JSON), last_train_loss,
//               last_val_loss, elapsed_s, elapsed_ns (the clock exactly), optimizer.param_groups
//               (JSON: the state dict's groups, each its options under torch's names, "params"
//               and "initial_lr"), time_budget (JSON, with --time-budget: train/time_budget.h)
//
// Train states written before the state dict (moments under adam.exp_avg.<name>, Muon's under
// muon.momentum_buffer.<name>, one adam_step) are read by train_state_v1.h and resume as they did.
#pragma once
#include <limits>
#include <optional>
#include <string>

#include "autograd/safetensors.h"
#include "data/tokenizer.h"
#include "models/language_model.h"
#include "optim/optimizer.h"
#include "train/config/run_config.h"
#include "train/time_budget.h"

namespace ag::train {

// Where a run stands between two iterations.
struct RunPosition {
  int64_t iter = 0;
  bool eval_done = false;
  double best_val_loss = std::numeric_limits<double>::infinity();
  int64_t skipped_updates = 0;
  Generator::State rng_model{}, rng_batch{}, rng_eval{};
  // The last evaluation and the training time so far, so that resuming a finished run reports
  // them (absent from older states: NaN and 0).
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();
  double last_val_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t elapsed_ns = 0;  // of the run's clock: a resumed run's clock continues from it exactly
  std::optional<BudgetState> budget;  // --time-budget: what it decided so far
  std::string run_id;  // the run's identity (train/run_folder/run_identity.h); "" in states written before it
  double elapsed_s() const { return static_cast<double>(elapsed_ns) * 1e-9; }
};

void save_train_state(const std::string& path, const TrainConfig& cfg, const models::LanguageModel& model,
                      const optim::Optimizer& opt, const RunPosition& pos, const data::CharTokenizer& tokenizer);

struct LoadedTrainState {
  TrainConfig config;  // as saved (data_path and out_dir included)
  RunPosition pos;
  data::CharTokenizer tokenizer;
};

// Reads the metadata and checks every tensor against the saved configuration; throws
// std::runtime_error naming the file and the problem.
LoadedTrainState read_train_state(const std::string& path);
LoadedTrainState read_train_state(const SafeTensorsFile& file);  // already in memory (MPI: broadcast by rank 0)
// Copies weights and optimizer state from the file into a model and optimizer built from
// read_train_state(path).config (the optimizer over every parameter of the model, as the
// configuration's --optimizer builds it).
void restore_train_state(const std::string& path, models::LanguageModel& model, optim::Optimizer& opt);
void restore_train_state(const SafeTensorsFile& file, models::LanguageModel& model, optim::Optimizer& opt);

// The tensor `key` of a train state, which must be float32 of `like`'s shape and finite; throws
// std::runtime_error naming the file and the tensor otherwise (either layout's reader uses it).
Tensor read_state_tensor(const SafeTensorsFile& file, const std::string& key, const Tensor& like);

}  // namespace ag::train
