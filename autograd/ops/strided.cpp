// The views behind indexing and in-place writes through views: select (x[i]), slice with a
// step (x.index({Slice(a, b, s)})), and the pair as_strided / as_strided_scatter, which name a
// region of a tensor by its geometry (shape, strides and offset in the elements of the tensor
// laid out contiguously). Each of the pair is the other's backward, so both are differentiable
// to any order; the in-place machinery (autograd/tensor_inplace.cpp) rewrites a base's history
// with them when one of its views is written in place.
#include <algorithm>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

// Throws unless every element of the region lies inside a tensor of `numel` elements and the
// region does not go backwards (no negative strides: none of attograd's views has one).
void check_region(int64_t numel, const Shape& shape, const Shape& strides, int64_t offset, const char* op) {
  if (shape.size() != strides.size())
    throw std::invalid_argument(std::string(op) + ": shape " + shape_str(shape) + " and strides " + shape_str(strides) +
                                " differ in rank");
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0)
      throw std::invalid_argument(std::string(op) + ": negative size or stride in shape " + shape_str(shape) +
                                  ", strides " + shape_str(strides));
    if (shape[i] == 0) empty = true;
    else last += (shape[i] - 1) * strides[i];
  }
  if (!empty && (offset < 0 || last >= numel))
    throw std::invalid_argument(std::string(op) + ": the region (shape " + shape_str(shape) + ", strides " +
                                shape_str(strides) + ", offset " + std::to_string(offset) + ") leaves a tensor of " +
                                std::to_string(numel) + " elements");
}

}  // namespace

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, a.dim(), "select", a);
  const int64_t n = a.shape()[d];
  if (index < -n || index >= n)
    throw std::out_of_range("index " + std::to_string(index) + " is out of bounds for dimension " + std::to_string(dim) +
                            " with size " + std::to_string(n));  // torch's message
  return squeeze(narrow(a, d, index < 0 ? index + n : index, 1), d);
}

Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  AG_PROFILE_OP("slice");
  const int64_t d = wrap_dim(dim, a.dim(), "slice", a);
  if (step <= 0) throw std::invalid_argument("slice step must be positive");  // torch's message
  const int64_t n = a.shape()[d];
  // Python's bounds: negative counts from the end, then clamped into [0, n].
  auto bound = [n](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    const int64_t w = *v < 0 ? *v + n : *v;
    return std::clamp<int64_t>(w, 0, n);
  };
  const int64_t b = bound(start, 0), e = std::max(bound(end, n), b);
  if (step == 1) return narrow(a, d, b, e - b);
  // A view that takes every step-th element: its stride along d is step times a's.
  Shape s = a.shape(), st = a.strides();
  s[d] = (e - b + step - 1) / step;
  st[d] *= step;
  Tensor out = make_view(a, s, st, a.impl().offset + b * a.strides()[d]);
  if (should_record({&a})) {
    // The same region of a contiguous layout of a's shape, for the backward.
    Shape cst = contiguous_strides(a.shape());
    const int64_t off = b * cst[d];
    cst[d] *= step;
    // out = a[b:e:step] along d  =>  da is g placed there, zeros elsewhere
    record(out, "slice", {a}, [in_shape = a.shape(), s, cst, off](const Tensor& g) {
      return Grads{as_strided_scatter(g, in_shape, s, cst, off)};
    });
  }
  return out;
}

Tensor as_strided(const Tensor& a, const Shape& shape, const Shape& strides, int64_t offset) {
  AG_PROFILE_OP("as_strided");
  check_region(a.numel(), shape, strides, offset, "as_strided");
  const Tensor c = a.contiguous();  // the geometry is that of a's contiguous layout (a copy if a is strided)
  Tensor out = make_view(c, shape, strides, c.impl().offset + offset);
  if (should_record({&c})) {
    // out = the region of a  =>  da is g placed in the region, zeros elsewhere
    record(out, "as_strided", {c}, [in_shape = a.shape(), shape, strides, offset](const Tensor& g) {
      return Grads{as_strided_scatter(g, in_shape, shape, strides, offset)};
    });
  }
  return out;
}

Tensor as_strided_scatter(const Tensor& src, const Shape& base_shape, const Shape& shape, const Shape& strides,
                          int64_t offset) {
  AG_PROFILE_OP("as_strided_scatter");
  kernels::check_float(src, "as_strided_scatter");
  if (src.shape() != shape)
    throw std::invalid_argument("as_strided_scatter: source " + describe(src) + " does not have the region's shape " +
                                shape_str(shape));
  check_region(shape_numel(base_shape), shape, strides, offset, "as_strided_scatter");
  Tensor out = Tensor::zeros(base_shape, src.dtype());
  write_values(make_view(out, shape, strides, offset), src);
  if (should_record({&src})) {
    // out = zeros with src in the region  =>  dsrc = the region of g
    record(out, "as_strided_scatter", {src},
           [shape, strides, offset](const Tensor& g) { return Grads{as_strided(g, shape, strides, offset)}; });
  }
  return out;
}

}  // namespace ag
