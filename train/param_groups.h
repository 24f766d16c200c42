// The trainer's AdamW parameter groups, nanoGPT's: parameters with two or more dims (weight
// matrices, embeddings) decay; the others (biases, LayerNorm gains) go in a group whose
// weight_decay is 0. AdamW itself decays every parameter of a group, as torch's: which ones
// decay is decided here, where the groups are made.
#pragma once
#include <vector>

#include "nn/module.h"
#include "train/optim/adam.h"

namespace ag::train {

// {decay, no_decay} in the model's parameter order, both with `options` but the second with
// weight_decay 0.
std::vector<optim::AdamW::ParamGroup> decay_groups(const nn::Module& model, const optim::AdamWOptions& options);

}  // namespace ag::train
