// Dim plumbing shared by the ops and the tensor copies, written once:
//  - wrap_dim: a dim that may be negative (counted from the end, as in PyTorch) -> [0, ndim);
//  - for_each_row: the walk over an n-d strided index space, one innermost row at a time.
#pragma once
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

// dim in [-ndim, ndim) -> [0, ndim). Throws std::invalid_argument naming the op and `t`.
// Ops that accept a dim on a 0-d tensor (reductions, as PyTorch) pass ndim = max(dim(), 1);
// unsqueeze and stack, which make a new dim, pass dim() + 1.
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, const Tensor& t) {
  const int64_t w = dim < 0 ? dim + ndim : dim;
  if (w < 0 || w >= ndim)
    throw std::invalid_argument(std::string(op) + ": dim " + std::to_string(dim) + " out of range for " + describe(t) +
                                " (valid: " + std::to_string(-ndim) + " to " + std::to_string(ndim - 1) + ")");
  return w;
}

// Walks the index space of `shape` (at least 1 dim, no zero-size dim) in row-major order and
// calls row(r, off) once per innermost row r, where off[k] is the element offset of the row's
// first element in operand k: start[k] + Σ_d idx[d]·strides[k][d]. The loop over the row's
// shape.back() elements (stride strides[k].back()) stays in the caller, so it is a tight
// loop. A carry counter advances the offsets: no division per element.
template <size_t N, class F>
void for_each_row(const Shape& shape, const std::array<const int64_t*, N>& strides, std::array<int64_t, N> off,
                  F&& row) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t rows = shape_numel(shape) / shape[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    row(r, off);
    for (int64_t d = nd - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace ag
