// Train states written before the optimizers saved themselves through their state dicts (up to
// the run whose optimizer was RunOptimizer): AdamW's moments under adam.exp_avg.<name> and
// adam.exp_avg_sq.<name> with one adam_step for all, and with --optimizer muon Muon's momentum
// under muon.momentum_buffer.<name> for the parameter table's Matrix rows. Read only: such a
// state resumes as it did, its optimizer state turned into the state dict of the optimizer the
// saved configuration builds. This file alone knows that layout's names.
#pragma once
#include "autograd/safetensors.h"
#include "models/language_model.h"
#include "optim/optimizer.h"
#include "train/config/run_config.h"

namespace ag::train {

// The old layout: its metadata has adam_step.
bool is_v1_train_state(const SafeTensorsFile& f);

// Checks every tensor against the configuration, before anything is built (the tensors are
// counted first: a configuration of 2^31 layers costs nothing). Throws std::runtime_error naming the file.
void check_v1_tensors(const SafeTensorsFile& f, const TrainConfig& cfg);

// The optimizer's state, as state dict: `fresh` is opt.state_dict() of the optimizer the
// configuration builds for `model`, before any step (its groups, no state); every parameter
// gets the state the file keeps for it, and every group its lr as initial_lr (the schedule's
// peak). Throws std::runtime_error naming the file for a tensor that is missing or not F32 of
// its parameter's shape.
optim::StateDict v1_optimizer_state(const SafeTensorsFile& f, const TrainConfig& cfg, const models::LanguageModel& model,
                                    const optim::Optimizer& opt);

}  // namespace ag::train
