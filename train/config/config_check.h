// Whether a run configuration can work, checked in one place before anything is read or built:
// each field against its row's rule in the field table (train/config/run_config.h: Check), every
// double finite, the model's name against the registry, and the one check across fields (the
// global batch splits into ranks × grad_accum micro-batches). The model's own fields are the
// model's to check, once the corpus has fixed vocab_size (check_model).
#pragma once
#include <cstdint>

#include "models/registry.h"
#include "train/config/run_config.h"

namespace ag::train {

// Throws ConfigError (train/config/config_error.h) naming the flag; returns the model's registry
// entry, resolved here once for the whole run.
const models::ModelEntry& validate_config(const TrainConfig& c, int64_t ranks);

// The model's own checks (entry.validate), then the run's memory estimate against this machine
// (train/memory_check.h), before anything is built. Throws ConfigError.
void check_model(const models::ModelEntry& entry, const TrainConfig& c);

}  // namespace ag::train
