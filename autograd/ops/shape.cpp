// Shape ops. Most are views on the input's storage (no copy); their backward maps the
// gradient back to the input's shape.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"
#include "base/memory_limit.h"

namespace ag {

namespace {
Shape infer_shape(const Tensor& a, const Shape& shape, const char* op) {
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw std::invalid_argument(std::string(op) + ": only one dim may be -1 in " + shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else if (s[i] < 0) {
      throw std::invalid_argument(std::string(op) + ": invalid dim in " + shape_str(shape));
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.numel() % known != 0)
      throw std::invalid_argument(std::string(op) + ": cannot reshape " + describe(a) + " to " + shape_str(shape));
    s[infer] = a.numel() / known;
  }
  if (shape_numel(s) != a.numel())
    throw std::invalid_argument(std::string(op) + ": cannot reshape " + describe(a) + " (" + std::to_string(a.numel()) +
                                " elements) to " + shape_str(shape));
  return s;
}

// The strides with which `shape` views the elements of a tensor of (old_shape, old_strides) in
// its row-major order, or none when no strides can (ATen's computeStride). The old dims fall
// into runs ("chunks"): within one, each dim's stride is the next one's times that one's size,
// so the run is a single block of memory with one innermost stride. Walking both shapes from
// the last dim, the new dims must group into consecutive runs holding the same numbers of
// elements as the old runs; a new dim inside a run takes the run's innermost stride times the
// elements of the new dims after it within that run. Size-1 dims fit anywhere.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape) {
  const int64_t new_rank = static_cast<int64_t>(shape.size());
  if (old_shape.empty()) return Shape(shape.size(), 1);  // one element: any strides do
  if (shape_numel(old_shape) == 0) {
    // No element to reach: the old strides if nothing changes, else contiguous ones (a size 0
    // counting as 1, so that no stride becomes 0).
    if (old_shape == shape) return old_strides;
    Shape st(shape.size());
    for (int64_t d = new_rank - 1; d >= 0; --d)
      st[d] = d == new_rank - 1 ? 1 : std::max<int64_t>(shape[d + 1], 1) * st[d + 1];
    return st;
  }
  Shape st(shape.size());
  int64_t new_d = new_rank - 1;
  int64_t run_stride = old_strides.back();  // the innermost stride of the current run
  int64_t old_count = 1, new_count = 1;     // elements in the current run, old and new dims
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    old_count *= old_shape[d];
    const bool run_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != old_count * run_stride);
    if (!run_ends) continue;
    while (new_d >= 0 && (new_count < old_count || shape[new_d] == 1)) {
      st[new_d] = new_count * run_stride;
      new_count *= shape[new_d];
      --new_d;
    }
    if (new_count != old_count) return std::nullopt;  // a new dim would span two runs
    if (d > 0) {
      run_stride = old_strides[d - 1];
      old_count = new_count = 1;
    }
  }
  if (new_d != -1) return std::nullopt;
  return st;
}

// Records the gradient of a reshape-like op: the gradient is reshaped back.
Tensor record_reshape(Tensor out, const char* op, const Tensor& a) {
  if (should_record({&a}))
    record(out, op, {a}, [in_shape = a.shape()](const Tensor& g) { return Grads{reshape(g, in_shape)}; });
  return out;
}
}  // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
  AG_PROFILE_OP("reshape");
  const Shape s = infer_shape(a, shape, "reshape");
  if (s == a.shape()) return a;
  if (a.is_contiguous()) return record_reshape(make_view(a, s, contiguous_strides(s), a.impl().offset), "reshape", a);
  // A strided view is copied first (the copy is recorded, so gradients still flow). The result
  // is a view of nothing the caller can reach, so it is no view (torch's _unsafe_view).
  Tensor c = a.contiguous();
  Tensor out = make_view(c, s, contiguous_strides(s), c.impl().offset);
  out.impl().view_base = nullptr;
  return record_reshape(out, "reshape", c);
}

Tensor view(const Tensor& a, const Shape& shape) {
  AG_PROFILE_OP("view");
  const Shape s = infer_shape(a, shape, "view");
  if (a.is_contiguous()) return record_reshape(make_view(a, s, contiguous_strides(s), a.impl().offset), "view", a);
  const std::optional<Shape> st = view_strides(a.shape(), a.strides(), s);
  if (!st)  // torch's message (an invalid_argument, as every bad input of an op: RuntimeError in Python)
    throw std::invalid_argument(
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead.");
  return record_reshape(make_view(a, s, *st, a.impl().offset), "view", a);
}

Tensor view_or_copy(const Tensor& a, const Shape& shape) {
  const Shape s = infer_shape(a, shape, "reshape");
  if (a.is_contiguous() || view_strides(a.shape(), a.strides(), s)) return view(a, s);
  return reshape(a, s);
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
  AG_PROFILE_OP("permute");
  const int64_t nd = a.dim();
  if (static_cast<int64_t>(dims.size()) != nd)
    throw std::invalid_argument("permute: " + std::to_string(dims.size()) + " dims given for " + describe(a));
  Shape s(nd), st(nd);
  std::vector<int64_t> inverse(nd, -1);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = wrap_dim(dims[i], nd, "permute", a);
    if (inverse[d] != -1) throw std::invalid_argument("permute: dim " + std::to_string(dims[i]) + " repeated");
    inverse[d] = i;
    s[i] = a.shape()[d];
    st[i] = a.strides()[d];
  }
  Tensor out = make_view(a, s, st, a.impl().offset);
  if (should_record({&a}))
    // out = a.permute(dims)  =>  da = g.permute(inverse)
    record(out, "permute", {a}, [inverse](const Tensor& g) { return Grads{permute(g, inverse)}; });
  return out;
}

Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) {
  const int64_t nd = a.dim();
  std::vector<int64_t> dims(nd);
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[wrap_dim(d0, nd, "transpose", a)], dims[wrap_dim(d1, nd, "transpose", a)]);
  return permute(a, dims);
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  AG_PROFILE_OP("narrow");
  const int64_t d = wrap_dim(dim, a.dim(), "narrow", a);
  const int64_t n = a.shape()[d];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    throw std::invalid_argument("narrow: range [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                ") out of bounds for dim " + std::to_string(dim) + " of " + describe(a));
  Shape s = a.shape();
  s[d] = length;
  Tensor out = make_view(a, s, a.strides(), a.impl().offset + start * a.strides()[d]);
  if (should_record({&a})) {
    record(out, "narrow", {a}, [in_shape = a.shape(), d, start, length](const Tensor& g) {
      // out = a[start : start+length] along d  =>  da is g placed there, zeros elsewhere
      if (length == in_shape[d]) return Grads{g};
      return Grads{slice_backward(g, in_shape, d, start, start + length)};
    });
  }
  return out;
}

Tensor slice_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, int64_t start, int64_t end) {
  AG_PROFILE_OP("slice_backward");
  kernels::check_float(grad, "slice_backward");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(input_shape.size()), "slice_backward", grad);
  Shape expect = input_shape;
  if (start >= 0 && start <= end && end <= input_shape[d]) expect[d] = end - start;
  if (grad.shape() != expect || start < 0 || start > end || end > input_shape[d])
    throw std::invalid_argument("slice_backward: grad " + describe(grad) + " is not the slice [" + std::to_string(start) +
                                ", " + std::to_string(end) + ") along dim " + std::to_string(dim) + " of " +
                                shape_str(input_shape));
  Tensor da = Tensor::zeros(input_shape, grad.dtype());
  {
    NoGradGuard values_only;  // a plain copy into the zeros: recorded below as one node
    make_view(da, grad.shape(), da.strides(), start * da.strides()[d]).copy_(grad);
  }
  if (should_record({&grad})) {
    // da = zeros with g at [start, end) along d  =>  dg = u[start : end] along d
    record(da, "slice_backward", {grad},
           [d, start, end](const Tensor& u) { return Grads{narrow(u, d, start, end - start)}; });
  }
  return da;
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  AG_PROFILE_OP("unsqueeze");
  const int64_t d = wrap_dim(dim, a.dim() + 1, "unsqueeze", a);  // the new dim may come last
  Shape s = a.shape(), st = a.strides();
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, d < a.dim() ? a.strides()[d] * a.shape()[d] : 1);
  return record_reshape(make_view(a, s, st, a.impl().offset), "unsqueeze", a);
}

Tensor squeeze(const Tensor& a, int64_t dim) {
  AG_PROFILE_OP("squeeze");
  const int64_t d = wrap_dim(dim, a.dim(), "squeeze", a);
  if (a.shape()[d] != 1)
    throw std::invalid_argument("squeeze: dim " + std::to_string(dim) + " has size " + std::to_string(a.shape()[d]) + " in " + describe(a));
  Shape s = a.shape(), st = a.strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return record_reshape(make_view(a, s, st, a.impl().offset), "squeeze", a);
}

Tensor concat(const std::vector<Tensor>& ts, int64_t dim) {
  AG_PROFILE_OP("concat");
  if (ts.empty()) throw std::invalid_argument("concat: no tensors given");
  const Tensor& first = ts[0];
  const int64_t d = wrap_dim(dim, first.dim(), "concat", first);
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (const Tensor& t : ts) {
    if (!t.defined()) throw std::invalid_argument("concat: undefined input tensor");
    if (t.dtype() != first.dtype())  // any dtype, one for all (the copy below is bytes)
      throw std::invalid_argument("concat: dtype mismatch, " + describe(first) + " and " + describe(t) +
                                  " (convert one with .to())");
    bool ok = t.dim() == first.dim();
    for (int64_t i = 0; ok && i < t.dim(); ++i) ok = i == d || t.shape()[i] == first.shape()[i];
    if (!ok)
      throw std::invalid_argument("concat: along dim " + std::to_string(dim) + ", " + describe(t) +
                                  " does not fit with " + describe(first));
    out_shape[d] += t.shape()[d];
  }
  Tensor out = Tensor::empty(out_shape, first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= out_shape[i];
  for (int64_t i = d + 1; i < first.dim(); ++i) inner *= out_shape[i];
  const size_t esz = dtype_size(first.dtype());
  int64_t col = 0;  // running offset along d
  std::vector<int64_t> sizes;
  for (const Tensor& t : ts) {
    const Tensor x = kernels::dense(t);
    const int64_t chunk = t.shape()[d] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.raw_data()) + (o * out_shape[d] * inner + col * inner) * esz,
                  static_cast<const char*>(x.raw_data()) + o * chunk * esz, static_cast<size_t>(chunk) * esz);
    col += t.shape()[d];
    sizes.push_back(t.shape()[d]);
  }
  if (should_record(ts)) {
    record(out, "concat", ts, [d, sizes](const Tensor& g) {
      // out = [a0 | a1 | ...] along d  =>  each ai gets its slice of g
      Grads gs;
      int64_t start = 0;
      for (int64_t s : sizes) {
        gs.push_back(narrow(g, d, start, s));
        start += s;
      }
      return gs;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  if (ts.empty()) throw std::invalid_argument("stack: no tensors given");
  const int64_t d = wrap_dim(dim, ts[0].dim() + 1, "stack", ts[0]);  // the new dim may come last
  std::vector<Tensor> parts;
  for (const Tensor& t : ts) {
    if (t.shape() != ts[0].shape())
      throw std::invalid_argument("stack: every tensor needs one shape, got " + describe(ts[0]) + " and " + describe(t));
    parts.push_back(unsqueeze(t, d));  // view, 1 along d
  }
  // out = [t0; t1; ...] along a new dim d: unsqueeze + concat, so the backward is theirs
  return concat(parts, d);
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  const int64_t d = wrap_dim(dim, a.dim(), "split", a);
  if (split_size <= 0) throw std::invalid_argument("split: split_size must be positive, got " + std::to_string(split_size));
  if (a.shape()[d] == 0) return {narrow(a, d, 0, 0)};  // one empty piece, as PyTorch
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < a.shape()[d]; start += split_size)
    parts.push_back(narrow(a, d, start, std::min(split_size, a.shape()[d] - start)));
  group_outputs(parts);  // one op's outputs: a piece's hooks see None when a sibling alone is used (engine.h)
  return parts;
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  const int64_t d = wrap_dim(dim, a.dim(), "chunk", a);
  if (chunks <= 0) throw std::invalid_argument("chunk: chunks must be positive, got " + std::to_string(chunks));
  const int64_t n = a.shape()[d];
  if (n == 0) {  // `chunks` empty pieces, as PyTorch: one view, its handle `chunks` times
    static const MemoryLimit limit = memory_limit();
    if (chunks > limit.bytes / static_cast<int64_t>(sizeof(Tensor)))
      throw OutOfMemoryError("chunk: " + std::to_string(chunks) + " empty pieces of an empty dim need more than the " +
                             human_bytes(limit.bytes) + " of " + limit.where);
    return std::vector<Tensor>(static_cast<size_t>(chunks), narrow(a, d, 0, 0));
  }
  return split(a, (n - 1) / chunks + 1, d);  // pieces of ceil(n / chunks), for any chunks without overflow
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  const int64_t d = wrap_dim(dim, a.dim(), "unbind", a);
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < a.shape()[d]; ++i) parts.push_back(squeeze(narrow(a, d, i, 1), d));  // views
  group_outputs(parts);
  return parts;
}

Tensor flip(const Tensor& a, const std::vector<int64_t>& dims) {
  AG_PROFILE_OP("flip");
  if (!a.defined()) throw std::invalid_argument("flip: undefined input tensor");
  std::vector<bool> flipped(static_cast<size_t>(a.dim()), false);
  Shape st = a.strides();
  int64_t offset = a.impl().offset;
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, std::max<int64_t>(a.dim(), 1), "flip", a);  // a 0-d tensor takes dim 0
    if (a.dim() == 0) continue;
    if (flipped[d]) throw std::invalid_argument("flip: dim " + std::to_string(dim) + " listed twice");
    flipped[d] = true;
    // A view that walks d backwards (negative stride), from its last element; copied at once,
    // so no tensor with a negative stride escapes.
    if (a.shape()[d] > 0) offset += (a.shape()[d] - 1) * st[d];
    st[d] = -st[d];
  }
  Tensor out = make_view(a, a.shape(), st, offset).clone();  // a fresh copy, as PyTorch
  if (should_record({&a}))
    // out = a reversed along dims  =>  da = g reversed along the same dims
    record(out, "flip", {a}, [dims](const Tensor& g) { return Grads{flip(g, dims)}; });
  return out;
}

Tensor expand(const Tensor& a, const Shape& shape) {
  AG_PROFILE_OP("expand");
  const Shape s = broadcast_shapes(a.shape(), shape, "expand");
  if (s != shape) throw std::invalid_argument("expand: cannot expand " + describe(a) + " to " + shape_str(shape));
  if (a.shape() == shape) return a;
  // Read a through stride-0 dims, then copy into fresh storage.
  Tensor out = make_view(a, shape, kernels::broadcast_strides(a, shape), a.impl().offset).contiguous();
  if (should_record({&a})) {
    // out = a broadcast to shape  =>  da = g summed over the broadcast dims, which is the
    // engine's broadcast reduction (engine.cpp, reduce_to_input): g is returned as it is
    record(out, "expand", {a}, [](const Tensor& g) { return Grads{g}; });
  }
  return out;
}

}  // namespace ag
