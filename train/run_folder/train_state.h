// train_state.safetensors: everything `attograd train --resume DIR` needs to continue a run
// exactly as if it had never stopped. It is self-contained (it holds the weights as well), so
// a crash between writing it and writing model.safetensors can never pair mismatched files.
//
//   tensors     model.<name>, adam.exp_avg.<name>, adam.exp_avg_sq.<name>     (F32); with
//               --optimizer muon, muon.momentum_buffer.<name> instead of the two adam ones for
//               the matrices Muon updates
//   __metadata__ format, iter (next iteration to run), eval_done (the evaluation of `iter`
//               already happened), adam_step, best_val_loss, skipped_updates,
//               rng.model / rng.batch / rng.eval (generator states), config (JSON), vocab (JSON),
//               last_train_loss, last_val_loss, elapsed_s (optional: added later)
#pragma once
#include <limits>
#include <string>

#include "autograd/safetensors.h"
#include "data/tokenizer.h"
#include "models/language_model.h"
#include "train/run_optimizer.h"
#include "train/config/run_config.h"

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
  double elapsed_s = 0;
  std::string run_id;  // the run's identity (train/run_folder/run_identity.h); "" in states written before it
};

void save_train_state(const std::string& path, const TrainConfig& cfg, const models::LanguageModel& model,
                      const RunOptimizer& opt, const RunPosition& pos, const data::CharTokenizer& tokenizer);

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
// read_train_state(path).config. The optimizer holds every parameter of the model; the file
// keeps one AdamW step count (adam_step) for all of AdamW's, so every such parameter's state gets it.
void restore_train_state(const std::string& path, models::LanguageModel& model, RunOptimizer& opt);
void restore_train_state(const SafeTensorsFile& file, models::LanguageModel& model, RunOptimizer& opt);

}  // namespace ag::train
