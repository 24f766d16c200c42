// Finite weights only: a checkpoint holding a NaN or an Inf is never written (it would replace
// the last good one) and never loaded (it would evaluate to "loss nan" and sample garbage).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag::train {

// The name of the first floating-point tensor holding a NaN or an Inf, or "" when all are finite.
std::string first_nonfinite(const std::vector<std::pair<std::string, Tensor>>& tensors);

// Throws std::runtime_error("<file>: cannot save: tensor '<name>' holds NaN or Inf; ...") when
// one of the tensors about to be written to file is not finite.
void require_finite_to_save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& file);

// Throws std::runtime_error("<file>: tensor '<name>' holds NaN or Inf; ...") for a file just read.
void require_finite_loaded(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& file);

}  // namespace ag::train
