// The parameter groups the run's optimizers share, nanoGPT's: the model's parameter table
// (models/param_table.h) says which parameters decay (its Decay and Matrix groups: weight
// matrices, embeddings) and which do not (NoDecay: biases, LayerNorm gains), which go in a
// group whose weight_decay is 0. AdamW itself decays every parameter of a group, as torch's:
// which ones decay is decided here, where the groups are made.
#pragma once
#include <vector>

#include "models/language_model.h"
#include "optim/adam.h"

namespace ag::train {

struct TrainConfig;

// AdamW's options of a run: --lr, --beta1, --beta2, --weight-decay, eps 1e-8.
optim::AdamWOptions run_adamw_options(const TrainConfig& cfg);

// {decay, no_decay} in the model's parameter order, both with `options` but the second with
// weight_decay 0.
std::vector<optim::AdamW::ParamGroup> decay_groups(const models::LanguageModel& model, const optim::AdamWOptions& options);

}  // namespace ag::train
