// Tensor::index and index_put_ (autograd/indexing.h): the basic indices become views, one
// dim at a time; a tensor index becomes a list of positions along one (flattened) dim.
#include "autograd/indexing.h"

#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"

namespace ag {

TensorIndex::TensorIndex(const char* s) : value(indexing::Ellipsis) {
  if (std::string(s) != "...")
    throw std::invalid_argument(std::string("Expected \"...\" to represent an ellipsis index, but got \"") + s + "\"");
}

namespace {

// What the basic indices made, and where a tensor index (if any) applies.
struct Selection {
  Tensor view;     // the basic indices applied
  Tensor index;    // the tensor index: int64 (any shape, flattened) or a bool mask; undefined if none
  int64_t dim = 0; // the dim of `view` where it applies (a mask covers mask.dim() dims from there)
};

Selection select_basic(const Tensor& self, const std::vector<TensorIndex>& indices) {
  int64_t consuming = 0, ellipses = 0, tensors = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice()) ++consuming;
    if (i.is_tensor()) {
      ++tensors;
      const Tensor& t = std::get<Tensor>(i.value);
      consuming += t.defined() && t.dtype() == DType::Bool ? t.dim() : 1;  // a 0-d mask is a bool
    }
    if (i.is_ellipsis()) ++ellipses;
  }
  if (ellipses > 1) throw std::invalid_argument("an index can only have a single ellipsis ('...')");
  if (tensors > 1)
    throw std::invalid_argument("index: attograd takes one tensor index per call (torch broadcasts several together)");
  if (consuming > self.dim())
    throw std::out_of_range("too many indices for tensor of dimension " + std::to_string(self.dim()));  // torch's message
  Selection sel;
  Tensor cur = self;
  int64_t d = 0, seen = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer()) {
      cur = select(cur, d, std::get<int64_t>(i.value));
      ++seen;
    } else if (i.is_slice()) {
      const auto& s = std::get<indexing::Slice>(i.value);
      cur = slice(cur, d, s.start(), s.stop(), s.step());
      ++d, ++seen;
    } else if (i.is_none()) {
      cur = unsqueeze(cur, d++);
    } else if (i.is_boolean() || (i.is_tensor() && std::get<Tensor>(i.value).defined() &&
                                   std::get<Tensor>(i.value).dtype() == DType::Bool && std::get<Tensor>(i.value).dim() == 0)) {
      const bool b = i.is_boolean() ? std::get<bool>(i.value) : std::get<Tensor>(i.value).item() != 0;
      cur = unsqueeze(cur, d);  // x[True] adds a dim of 1; x[False] one of 0, as torch's
      if (!b) cur = narrow(cur, d, 0, 0);
      ++d;
    } else if (i.is_ellipsis()) {
      d += (cur.dim() - d) - (consuming - seen);
    } else {
      const Tensor& t = std::get<Tensor>(i.value);
      if (!t.defined()) throw std::invalid_argument("index: an undefined Tensor as an index");
      if (t.dtype() != DType::Int64 && t.dtype() != DType::Bool)
        throw std::invalid_argument("tensors used as indices must be long, int, byte or bool tensors");  // torch's message
      sel.index = t;
      sel.dim = d;
      const int64_t k = t.dtype() == DType::Bool ? t.dim() : 1;
      d += k, seen += k;
    }
  }
  sel.view = cur;
  return sel;
}

// The positions a tensor index selects along the dims it covers, flattened: an int64 index's
// values (negative ones from the end), a mask's true elements in row-major order.
std::vector<int64_t> positions(const Selection& sel) {
  const Tensor& t = sel.index;
  std::vector<int64_t> out;
  if (t.dtype() == DType::Int64) {
    const int64_t n = sel.view.size(sel.dim);
    for (double v : t.to_double_vector()) {
      const auto p = static_cast<int64_t>(v);
      if (p < -n || p >= n)
        throw std::out_of_range("index " + std::to_string(p) + " is out of bounds for dimension " +
                                std::to_string(sel.dim) + " with size " + std::to_string(n));
      out.push_back(p < 0 ? p + n : p);
    }
    return out;
  }
  const Shape covered(sel.view.shape().begin() + sel.dim, sel.view.shape().begin() + sel.dim + t.dim());
  if (covered != t.shape())
    throw std::invalid_argument("The shape of the mask " + shape_str(t.shape()) + " at index " + std::to_string(sel.dim) +
                                " does not match the shape of the indexed tensor " + shape_str(sel.view.shape()));
  const std::vector<double> m = t.to_double_vector();
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] != 0) out.push_back(static_cast<int64_t>(i));
  return out;
}

// The view with the dims a mask covers merged into one (a copy when they cannot be merged in place).
Tensor flatten_covered(const Selection& sel) {
  if (sel.index.dtype() == DType::Int64) return sel.view;
  const int64_t k = sel.index.dim();
  Shape s(sel.view.shape().begin(), sel.view.shape().begin() + sel.dim);
  s.push_back(-1);
  s.insert(s.end(), sel.view.shape().begin() + sel.dim + k, sel.view.shape().end());
  return reshape(sel.view, s);
}

Tensor index_impl(const Tensor& self, const std::vector<TensorIndex>& indices) {
  const Selection sel = select_basic(self, indices);
  if (!sel.index.defined()) return sel.view;
  const std::vector<int64_t> pos = positions(sel);
  const Tensor flat = flatten_covered(sel);
  Tensor picked = index_select(flat, sel.dim, Tensor::from_vector(pos, {static_cast<int64_t>(pos.size())}));
  if (sel.index.dtype() == DType::Int64 && sel.index.dim() != 1) {  // the index's own shape replaces the dim
    Shape s(picked.shape().begin(), picked.shape().begin() + sel.dim);
    s.insert(s.end(), sel.index.shape().begin(), sel.index.shape().end());
    s.insert(s.end(), picked.shape().begin() + sel.dim + 1, picked.shape().end());
    picked = reshape(picked, s);
  }
  return picked;
}

// index_put_: the value broadcast to what index() would return, written through the selection.
const Tensor& index_put_impl(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor* value, double number) {
  const Selection sel = select_basic(self, indices);
  if (!sel.index.defined()) {
    if (value) sel.view.copy_(*value);
    else sel.view.fill_(number);
    return self;
  }
  const std::vector<int64_t> pos = positions(sel);
  const Tensor& t = sel.index;
  const bool mask = t.dtype() == DType::Bool;
  // The elements the index covers, walked one position at a time through views of self.
  const Shape covered = mask ? t.shape() : Shape{sel.view.size(sel.dim)};
  Tensor src;
  if (value) {
    Shape target = sel.view.shape();
    target.erase(target.begin() + sel.dim, target.begin() + sel.dim + static_cast<int64_t>(covered.size()));
    target.insert(target.begin() + sel.dim, static_cast<int64_t>(pos.size()));
    const Tensor v = value->dtype() == self.dtype() ? *value : value->to(self.dtype());
    bool fits = v.dim() <= static_cast<int64_t>(target.size());
    for (int64_t k = 1; fits && k <= v.dim(); ++k) fits = v.size(-k) == 1 || v.size(-k) == target[target.size() - k];
    if (!fits)  // torch's message
      throw std::invalid_argument("shape mismatch: value tensor of shape " + shape_str(v.shape()) +
                                  " cannot be broadcast to indexing result of shape " + shape_str(target));
    if (v.shape() == target) src = v;
    else if (v.requires_grad()) src = expand(v, target);  // differentiable: backward sums
    else src = make_view(v, target, kernels::broadcast_strides(v, target), v.impl().offset);
  }
  const Shape strides = contiguous_strides(covered);
  for (size_t j = 0; j < pos.size(); ++j) {
    Tensor dst = sel.view;
    int64_t rest = pos[j];
    for (size_t k = 0; k < covered.size(); ++k) {  // the multi-index of the j-th position
      dst = select(dst, sel.dim, rest / strides[k]);
      rest %= strides[k];
    }
    if (value) dst.copy_(select(src, sel.dim, static_cast<int64_t>(j)));
    else dst.fill_(number);
  }
  return self;
}

}  // namespace

Tensor Tensor::operator[](int64_t index) const { return ag::select(*this, 0, index); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return ag::select(*this, dim, index); }

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index_impl(*this, std::vector<TensorIndex>(indices));
}
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const { return index_impl(*this, indices); }

const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) const {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), &value, 0.0);
}
const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, double value) const {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), nullptr, value);
}
const Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) const {
  return index_put_impl(*this, indices, &value, 0.0);
}
const Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value) const {
  return index_put_impl(*this, indices, nullptr, value);
}

}  // namespace ag
