#include "train/finite.h"

#include <cmath>
#include <stdexcept>

#include "autograd/kernels/dispatch.h"

namespace ag::train {

std::string first_nonfinite(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || (t.dtype() != DType::Float32 && t.dtype() != DType::Float64)) continue;
    const Tensor c = t.detach().contiguous();
    bool bad = false;
    AG_DISPATCH_FLOAT(c.dtype(), "finite check", [&] {
      const scalar_t* d = c.data<scalar_t>();
      for (int64_t i = 0, n = c.numel(); i < n && !bad; ++i) bad = !std::isfinite(d[i]);
    });
    if (bad) return name;
  }
  return "";
}

void require_finite_to_save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& file) {
  const std::string bad = first_nonfinite(tensors);
  if (!bad.empty())
    throw std::runtime_error(file + ": not saved: tensor '" + bad +
                             "' holds a non-finite value (NaN or Inf; the training diverged); the file on disk is kept as it was");
}

void require_finite_loaded(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& file) {
  const std::string bad = first_nonfinite(tensors);
  if (!bad.empty())
    throw std::runtime_error(file + ": tensor '" + bad + "' holds a non-finite value (NaN or Inf); a checkpoint must hold finite weights");
}

}  // namespace ag::train
