// The sizes a model configuration implies, computed before anything is built and with checked
// arithmetic (autograd/checked.h), so that a configuration from a flag or a file's metadata
// can be refused with a clear message instead of wrapping around or allocating until memory
// runs out. Each registered model (models/registry.h) points at its functions here;
// tests/test_model_size.cpp holds them to the models they describe.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "models/model_config.h"

namespace ag::models {

using ParameterShapes = std::vector<std::pair<std::string, Shape>>;

// The number of parameter tensors. Throws std::overflow_error.
int64_t gpt_num_tensors(const ModelConfig& cfg);  // 4 + 12 per block
int64_t mlp_num_tensors(const ModelConfig& cfg);  // 5

// The model's named_parameters() as (name, shape), in the same order, without building it.
// Lists num_tensors(cfg) entries: check that count against a file's before calling this with a
// configuration read from the file.
ParameterShapes gpt_parameter_shapes(const ModelConfig& cfg);
ParameterShapes mlp_parameter_shapes(const ModelConfig& cfg);

// Estimated peak bytes (float32) of training with AdamW on batches of `batch` sequences of
// block_size when training (weights, gradients, both moments, the activations autograd keeps
// for backward and their gradients), or of a no-grad forward of `batch` sequences when not.
// Within a small factor of the truth: used to refuse what cannot fit. Throws
// std::overflow_error when it does not fit 64 bits.
int64_t gpt_memory_bytes(const ModelConfig& cfg, int64_t batch, bool training);
int64_t mlp_memory_bytes(const ModelConfig& cfg, int64_t batch, bool training);

}  // namespace ag::models
