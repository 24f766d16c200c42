// Refusing, before anything is allocated, a model or batch whose memory estimate
// (models/model_size.h, through the registry's ModelEntry::memory_bytes) exceeds what this process may use
// (base/memory_limit.h), or whose OpenBLAS work buffers (one per thread) the address-space
// limit cannot hold (OpenBLAS would retry forever). The message names the estimate, the limit
// and the flags to change.
#pragma once
#include <cstdint>
#include <string>

#include "models/registry.h"
#include "train/config/run_config.h"

namespace ag::train {

// Throws ConfigError (train/config/config_error.h) when training cfg on batches of `batch` would not
// fit, or when its sizes do not even fit 64 bits.
void require_training_fits(const models::ModelConfig& cfg, int64_t batch);
// The same with the model's registry entry already resolved.
void require_training_fits(const models::ModelEntry& entry, const models::ModelConfig& cfg, int64_t batch);
// The same for a whole run, and what grows with its other flags: the losses an evaluation
// keeps (8 bytes per --eval-iters batch) and the final sample (--sample-tokens).
void require_training_fits(const TrainConfig& c);
void require_training_fits(const models::ModelEntry& entry, const TrainConfig& c);

// Throws std::runtime_error("<file>: ...") when evaluating or sampling one sequence with the
// model a checkpoint's metadata describes would not fit.
void require_inference_fits(const models::ModelConfig& cfg, const std::string& file);

}  // namespace ag::train
