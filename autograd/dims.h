// Dim plumbing shared by the ops, written once:
//  - broadcast_shapes: the shape two shapes broadcast to;
//  - size_mismatch: torch's error for two shapes that must be equal and are not;
//  - wrap_dim (tensor.h, whose Tensor::size uses it too): a dim that may be negative (counted
//    from the end, as in PyTorch) -> [0, ndim);
//  - for_each_row (for_each_row.h, below the tensor, whose copies use it too): the walk over an
//    n-d strided index space, one innermost row at a time.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/for_each_row.h"
#include "autograd/tensor.h"

namespace ag {

// The shape two shapes broadcast to (NumPy's rule); throws naming `op` when they do not.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                                  " cannot be broadcast (dim " + std::to_string(i) + ": " + std::to_string(da) +
                                  " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// torch's error when an in-place update of a (a .grad, an optimizer's parameter or state) meets
// a b of another shape, naming the first dim from the right that differs, then `what` (which
// tensors). a and b are meant to be equal; the caller has found they are not.
inline std::invalid_argument size_mismatch(const Shape& a, const Shape& b, const std::string& what) {
  const size_t nd = std::max(a.size(), b.size());
  for (size_t i = nd; i-- > 0;) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::invalid_argument("The size of tensor a (" + std::to_string(da) + ") must match the size of tensor b (" +
                                   std::to_string(db) + ") at non-singleton dimension " + std::to_string(i) + " (" +
                                   what + ")");
  }
  return std::invalid_argument("output with shape " + shape_str(a) + " doesn't match the broadcast shape " +
                               shape_str(broadcast_shapes(a, b, "size_mismatch")) + " (" + what + ")");
}

}  // namespace ag
