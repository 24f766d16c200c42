// The sizes a GPTConfig implies, computed before anything is built and with checked arithmetic
// (autograd/checked.h), so that a configuration from a flag or a file's metadata can be refused
// with a clear message instead of wrapping around or allocating until memory runs out.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "models/transformer_lm.h"

namespace ag::models {

// The number of parameter tensors: 4 + 12 per block. Throws std::overflow_error.
int64_t gpt_num_tensors(const GPTConfig& cfg);

// The number of parameters (the tied head counted once). Throws std::overflow_error.
int64_t gpt_num_parameters(const GPTConfig& cfg);

// TransformerLM(cfg).named_parameters() as (name, shape), in the same order, without building
// the model. Lists gpt_num_tensors(cfg) entries: check that count against what a file holds
// before calling this with a configuration from the file.
std::vector<std::pair<std::string, Shape>> gpt_parameter_shapes(const GPTConfig& cfg);

// Estimated peak bytes of training with AdamW on batches of `batch` sequences of block_size
// (float32): weights, gradients and the two moments, plus the activations autograd keeps for
// backward and their gradients. An estimate (within a small factor), used to refuse what
// cannot fit; throws std::overflow_error when it does not fit 64 bits.
int64_t gpt_training_bytes(const GPTConfig& cfg, int64_t batch);

// Estimated peak bytes of a no-grad forward of one sequence of block_size (eval, sample).
int64_t gpt_inference_bytes(const GPTConfig& cfg);

}  // namespace ag::models
