#include "train/optimizers/registry.h"

namespace ag::train {

// The rows, each in its own file.
OptimizerEntry adamw_optimizer();  // train/optimizers/adamw.cpp
OptimizerEntry muon_optimizer();   // train/optimizers/muon.cpp

template <>
std::vector<OptimizerEntry> OptimizerRegistry::builtin() {
  return {adamw_optimizer(), muon_optimizer()};
}

}  // namespace ag::train
