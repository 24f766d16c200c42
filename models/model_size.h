// The memory a model configuration needs, estimated before anything is built and with checked
// arithmetic (base/checked.h), so that a configuration from a flag or a file's metadata can
// be refused with a clear message instead of wrapping around or allocating until memory runs
// out. The parameters come from the model's table (models/param_table.h), the activations from
// its own count per position (models/registry.h: ModelEntry::memory_bytes puts them together).
#pragma once
#include <cstdint>

namespace ag::models {

// Estimated peak bytes (float32) of training with AdamW over `positions` positions (batch ×
// block_size) when training (weights, gradients, both moments, the activations autograd keeps
// for backward and their gradients), or of a no-grad forward when not. Within a small factor
// of the truth: used to refuse what cannot fit. Throws std::overflow_error when it does not
// fit 64 bits.
int64_t memory_bytes(int64_t parameters, int64_t activation_floats_per_position, int64_t positions, bool training);

}  // namespace ag::models
