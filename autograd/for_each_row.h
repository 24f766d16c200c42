// for_each_row: the walk over an n-d strided index space, one innermost row at a time, shared by
// the tensor's own copies (tensor.cpp) and the ops (through dims.h). Plain index arithmetic: it
// knows nothing of tensors, so the tensor layer can use it without reaching up.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ag {

// Walks the index space of `shape` (at least 1 dim, no zero-size dim) in row-major order and
// calls row(r, off) once per innermost row r, where off[k] is the element offset of the row's
// first element in operand k: start[k] + Σ_d idx[d]·strides[k][d]. The loop over the row's
// shape.back() elements (stride strides[k].back()) stays in the caller, so it is a tight
// loop. A carry counter advances the offsets: no division per element.
template <size_t N, class F>
void for_each_row(const std::vector<int64_t>& shape, const std::array<const int64_t*, N>& strides, std::array<int64_t, N> off,
                  F&& row) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) rows *= shape[d];
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
