// Tensor.__getitem__ and __setitem__: torch's basic indexing (ints, slices with a positive step,
// None, Ellipsis) as views, and one advanced index (an int64 or bool tensor, or a list of ints or
// bools) as a gather, as torch places it when there is a single one.
//
// Reading: an int is narrow + squeeze, a slice of step 1 is narrow, a slice of step k is a
// strided view recorded as one op ("slice") whose backward is made of differentiable ops (so
// double backward works); an int tensor index is index_select, a bool mask selects its true
// positions. Writing (t[...] = v) works on the same views, under the in-place rules of copy_
// (recorded in a graph, as torch's).
#include <algorithm>
#include <cstring>

#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/ops.h"
#include "common.h"
#include "ints.h"
#include "scalars.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Shape;
using ag::Tensor;

// Elements start, start + step, ... (count n) along dim d, as a view; recorded when a is.
Tensor strided_slice(const Tensor& a, int64_t d, int64_t start, int64_t stop, int64_t step) {
  // The count without overflow for any step up to sys.maxsize: ceil((stop - start) / step).
  const int64_t n = stop > start ? (stop - start - 1) / step + 1 : 0;
  // One element or none is a narrow: its stride never matters (and times a huge step would
  // overflow), nor do the step - 1 zeros between elements its backward would interleave.
  if (n <= 1) return ag::narrow(a, d, start, n);
  Shape shape = a.shape(), strides = a.strides();
  shape[static_cast<size_t>(d)] = n;
  if (__builtin_mul_overflow(strides[static_cast<size_t>(d)], step, &strides[static_cast<size_t>(d)]))
    throw ag::IndexError("slice step " + std::to_string(step) + " times the stride of dim " + std::to_string(d) +
                         " overflows int64");
  Tensor out = ag::make_view(a, shape, strides, a.impl().offset + start * a.strides()[static_cast<size_t>(d)]);
  if (ag::should_record({&a})) {
    ag::record(out, "slice", {a}, [in_shape = a.shape(), d, start, stop, step, n](const Tensor& g) {
      // out = a[start:stop:step] along d  =>  da holds g[i] at start + i·step, zeros elsewhere:
      // g interleaved with step − 1 zeros, cut to stop − start, placed at start.
      Shape zshape = g.shape();
      zshape.insert(zshape.begin() + d + 1, step - 1);
      zshape[static_cast<size_t>(d)] = n;
      Tensor spread = ag::concat({ag::unsqueeze(g, d + 1), Tensor::zeros(zshape, g.dtype())}, d + 1);
      Shape flat = g.shape();
      flat[static_cast<size_t>(d)] = n * step;
      spread = ag::narrow(ag::reshape(spread, flat), d, 0, stop - start);
      return ag::Grads{ag::slice_backward(spread, in_shape, d, start, stop)};
    });
  }
  return out;
}

// a[i] along dim d; `shown_dim` is the dim of the indexed tensor an error names (torch's).
Tensor select_int(const Tensor& a, int64_t d, int64_t i, int64_t shown_dim = -1) {
  const int64_t size = a.size(d);
  if (i < -size || i >= size)
    throw ag::IndexError("index " + std::to_string(i) + " is out of bounds for dimension " +
                         std::to_string(shown_dim < 0 ? d : shown_dim) + " with size " + std::to_string(size));
  if (i < 0) i += size;
  return ag::squeeze(ag::narrow(a, d, i, 1), d);
}

// a's rows along d at the int64 `index` (1-d), any dtype; recorded for float tensors.
Tensor take(const Tensor& a, int64_t d, const Tensor& index) {
  if (ag::is_floating(a.dtype())) {
    // Negative positions count from the end, as torch's (index_select takes [0, n) only).
    const int64_t n = a.size(d);
    std::vector<int64_t> at;
    bool negative = false;
    for (double v : index.to_double_vector()) {
      const auto p = static_cast<int64_t>(v);
      if (p < -n || p >= n)
        throw ag::IndexError("index " + std::to_string(p) + " is out of bounds for dimension " + std::to_string(d) +
                             " with size " + std::to_string(n));
      negative |= p < 0;
      at.push_back(p < 0 ? p + n : p);
    }
    return ag::index_select(a, d, negative ? Tensor::from_vector(at, index.shape()) : index);
  }
  const Tensor src = a.contiguous(), idx = index.contiguous();
  Shape shape = a.shape();
  shape[static_cast<size_t>(d)] = idx.numel();
  Tensor out = Tensor::empty(shape, a.dtype());
  int64_t outer = 1, inner = static_cast<int64_t>(ag::dtype_size(a.dtype()));
  for (int64_t i = 0; i < d; ++i) outer *= a.size(i);
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.size(i);
  const int64_t n = a.size(d);
  const int64_t* ix = idx.data<int64_t>();
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < idx.numel(); ++j) {
      const int64_t r = ix[j] < 0 ? ix[j] + n : ix[j];
      if (r < 0 || r >= n)
        throw ag::IndexError("index " + std::to_string(ix[j]) + " is out of bounds for dimension " + std::to_string(d) +
                             " with size " + std::to_string(n));
      std::memcpy(to + (o * idx.numel() + j) * inner, from + (o * n + r) * inner, static_cast<size_t>(inner));
    }
  return out;
}

// The positions where a bool mask is true, as int64 indices into its flattened elements.
Tensor true_positions(const Tensor& mask) {
  const Tensor m = mask.contiguous();
  const bool* p = m.data<bool>();
  std::vector<int64_t> at;
  for (int64_t i = 0; i < m.numel(); ++i)
    if (p[i]) at.push_back(i);
  return Tensor::from_vector(at, {static_cast<int64_t>(at.size())});
}

// A list or tuple inside an index ([0, 2], [True, False]) as the tensor torch makes of it.
Tensor index_tensor(nb::handle h) {
  Tensor t;
  if (nb::try_cast(h, t)) return t;
  std::vector<int64_t> ints;
  std::vector<bool> bools;
  bool all_bool = true;
  for (nb::handle item : nb::iter(h)) {
    if (!PyIndex_Check(item.ptr()))
      throw nb::index_error("tensors used as indices must be long, int, byte or bool tensors");
    all_bool &= PyBool_Check(item.ptr());
    bools.push_back(item.ptr() == Py_True);
    ints.push_back(int64_arg(item, "index"));
  }
  const int64_t n = static_cast<int64_t>(ints.size());
  if (all_bool && n > 0) return Tensor::from_vector(bools, {n});
  return Tensor::from_vector(ints, {n});
}

bool is_advanced(nb::handle item) {
  Tensor t;
  if (nb::try_cast(item, t)) return true;
  return nb::isinstance<nb::list>(item);
}

// How many dims of the indexed tensor an index item consumes.
int64_t dims_consumed(nb::handle item) {
  if (item.is_none() || item.is(Py_Ellipsis)) return 0;
  if (is_advanced(item)) {
    const Tensor t = index_tensor(item);
    return t.dtype() == DType::Bool ? std::max<int64_t>(t.dim(), 1) : 1;
  }
  return 1;
}

struct Indexed {
  Tensor view;          // the tensor after the basic items (a view of the original)
  Tensor advanced;      // the advanced index, or undefined
  int64_t advanced_dim = 0;  // where it applies in `view`
};

// Applies the basic items as views; records where the advanced one applies (at most one).
Indexed apply_basic(const Tensor& self, nb::handle index) {
  nb::tuple items = nb::isinstance<nb::tuple>(index) ? nb::borrow<nb::tuple>(index) : nb::make_tuple(index);
  int64_t consumed = 0, ellipses = 0;
  for (nb::handle item : items) {
    consumed += dims_consumed(item);
    ellipses += item.is(Py_Ellipsis);
  }
  if (ellipses > 1) throw nb::index_error("an index can only have a single ellipsis ('...')");
  if (consumed > self.dim())
    throw ag::IndexError("too many indices for tensor of dimension " + std::to_string(self.dim()));
  Indexed r{self, Tensor(), 0};
  int64_t d = 0;         // the dim of r.view the next item applies to
  int64_t original = 0;  // ... and of self, for error messages
  for (nb::handle item : items) {
    if (item.is_none()) {
      r.view = ag::unsqueeze(r.view, d++);
    } else if (item.is(Py_Ellipsis)) {
      d += self.dim() - consumed;
      original += self.dim() - consumed;
    } else if (PySlice_Check(item.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(item.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      if (step <= 0) throw ag::ValueError("step must be greater than zero");
      const int64_t size = r.view.size(d);
      PySlice_AdjustIndices(static_cast<Py_ssize_t>(size), &start, &stop, step);
      if (step == 1) r.view = ag::narrow(r.view, d, start, std::max<int64_t>(stop - start, 0));
      else r.view = strided_slice(r.view, d, start, stop, step);
      ++d;
      ++original;
    } else if (is_advanced(item)) {
      if (r.advanced.defined())
        throw nb::index_error("attograd indexes with one tensor (or list) at a time; index again for another");
      r.advanced = index_tensor(item);
      if (r.advanced.dtype() != DType::Int64 && r.advanced.dtype() != DType::Bool)
        throw nb::index_error("tensors used as indices must be long, int, byte or bool tensors");
      r.advanced_dim = d;
      const int64_t k = r.advanced.dtype() == DType::Bool ? std::max<int64_t>(r.advanced.dim(), 1) : 1;
      d += k;
      original += k;
    } else if (PyIndex_Check(item.ptr())) {
      r.view = select_int(r.view, d, int64_arg(item, "index"), original++);
    } else {
      throw nb::index_error(("only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid "
                             "indices (got " + nb::cast<std::string>(nb::str(item.type().attr("__name__"))) + ")")
                                .c_str());
    }
  }
  return r;
}

// A bool mask's dims [d, d + k) of `view` merged into one (reshape: a view when it can be).
Tensor merge_mask_dims(const Tensor& view, int64_t d, const Tensor& mask) {
  for (int64_t i = 0; i < mask.dim(); ++i)
    if (mask.size(i) != view.size(d + i))
      throw ag::IndexError("The shape of the mask " + ag::shape_str(mask.shape()) + " at index " + std::to_string(i) +
                           " does not match the shape of the indexed tensor " + ag::shape_str(view.shape()) +
                           " at index " + std::to_string(d + i));
  Shape merged(view.shape().begin(), view.shape().begin() + d);
  merged.push_back(mask.numel());
  merged.insert(merged.end(), view.shape().begin() + d + mask.dim(), view.shape().end());
  return ag::reshape(view, merged);
}

Tensor getitem(const Tensor& self, nb::handle index) {
  Indexed r = apply_basic(self, index);
  if (!r.advanced.defined()) return r.view;
  const int64_t d = r.advanced_dim;
  if (r.advanced.dtype() == DType::Bool) {
    if (r.advanced.dim() == 0) {  // x[True] adds a dim of size 1, x[False] of size 0
      Tensor v = ag::unsqueeze(r.view, d);
      return r.advanced.item() != 0 ? v : ag::narrow(v, d, 0, 0);
    }
    return take(merge_mask_dims(r.view, d, r.advanced), d, true_positions(r.advanced));
  }
  const Tensor flat = ag::reshape(r.advanced, {-1});
  Tensor out = take(r.view, d, flat);
  Shape shape(out.shape().begin(), out.shape().begin() + d);
  shape.insert(shape.end(), r.advanced.shape().begin(), r.advanced.shape().end());
  shape.insert(shape.end(), out.shape().begin() + d + 1, out.shape().end());
  return ag::reshape(out, shape);
}

// The value assigned, as a tensor of `like`'s dtype broadcast to `shape`.
Tensor value_for(nb::handle value, const Tensor& like, const Shape& shape) {
  Tensor v;
  if (!nb::try_cast(value, v)) {
    const std::optional<Scalar> s = scalar_from_python(value);
    if (!s) throw nb::type_error("can only assign a Tensor or a number to a Tensor's elements");
    return Tensor::full(shape, s->value, like.dtype());
  }
  if (v.dtype() != like.dtype()) v = v.to(like.dtype());
  return v.shape() == shape ? v : ag::expand(v, shape);
}

// Writes through the same views, with the in-place rules of copy_ (autograd/tensor_inplace.cpp):
// recorded when self or the value is part of a graph, the base taking the new history. The views
// are made in grad mode, so that each knows whether its base requires grad.
void setitem(const Tensor& self, nb::handle index, nb::handle value) {
  Indexed r = apply_basic(self, index);
  // A tensor index writes through index_put_ in torch, which refuses a leaf by its own words.
  if (r.advanced.defined() && ag::GradMode::enabled() && self.requires_grad() && self.is_leaf())
    throw std::runtime_error("a leaf Variable that requires grad is being used in an in-place operation.");
  if (!r.advanced.defined()) {
    Tensor target = r.view;
    target.copy_(value_for(value, target, target.shape()));
    return;
  }
  const int64_t d = r.advanced_dim;
  Tensor base = r.view;
  Tensor positions;
  if (r.advanced.dtype() == DType::Bool) {
    if (r.advanced.dim() == 0) {
      if (r.advanced.item() != 0) base.copy_(value_for(value, base, base.shape()));
      return;
    }
    for (int64_t i = 0; i < r.advanced.dim(); ++i)
      if (r.advanced.size(i) != base.size(d + i))
        throw ag::IndexError("The shape of the mask " + ag::shape_str(r.advanced.shape()) + " at index " +
                             std::to_string(i) + " does not match the shape of the indexed tensor " +
                             ag::shape_str(base.shape()) + " at index " + std::to_string(d + i));
    positions = true_positions(r.advanced);
  } else {
    positions = ag::reshape(r.advanced, {-1}).contiguous();
  }
  // One element (or row) at a time: each selected position of the advanced dims is a view of
  // `base`, written with its part of the value.
  const int64_t k = r.advanced.dtype() == DType::Bool ? r.advanced.dim() : 1;
  const int64_t count = positions.numel();
  Shape row_shape(base.shape().begin(), base.shape().begin() + d);
  row_shape.insert(row_shape.end(), base.shape().begin() + d + k, base.shape().end());
  Shape value_shape(base.shape().begin(), base.shape().begin() + d);
  value_shape.push_back(count);
  value_shape.insert(value_shape.end(), base.shape().begin() + d + k, base.shape().end());
  const Tensor v = value_for(value, base, value_shape);
  const int64_t* pos = positions.data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    Tensor place = base;
    int64_t p = pos[j];
    if (r.advanced.dtype() == DType::Bool) {
      std::vector<int64_t> coord(static_cast<size_t>(k));
      for (int64_t i = k - 1; i >= 0; --i) {
        coord[static_cast<size_t>(i)] = p % r.advanced.size(i);
        p /= r.advanced.size(i);
      }
      for (int64_t i = 0; i < k; ++i) place = select_int(place, d, coord[static_cast<size_t>(i)]);
    } else {
      place = select_int(place, d, p);
    }
    place.copy_(select_int(v, d, j));
  }
}

// index_put_(indices, values, accumulate): indices is a tuple of index tensors (None for a whole
// dim), as torch's; one of them a tensor, as attograd's indexing takes. accumulate adds the
// values (repeated positions adding up) instead of writing them.
void index_put(const Tensor& self, nb::handle indices, nb::handle values, bool accumulate) {
  if (!nb::isinstance<nb::tuple>(indices) && !nb::isinstance<nb::list>(indices))
    throw nb::type_error("index_put_(): argument 'indices' must be tuple of Tensors");
  nb::list items;
  int64_t tensors = 0, at = 0, d = 0;
  Tensor index;
  for (nb::handle item : nb::iter(indices)) {
    if (item.is_none()) {
      items.append(nb::steal(PySlice_New(nullptr, nullptr, nullptr)));
    } else {
      index = nb::cast<Tensor>(item);
      at = d;
      ++tensors;
      items.append(item);
    }
    ++d;
  }
  if (tensors != 1)
    throw std::runtime_error("index_put_: attograd takes one index tensor (the others None), got " +
                             std::to_string(tensors));
  if (!accumulate) return setitem(self, nb::tuple(items), values);
  if (index.dtype() == DType::Bool) {  // a mask over one dim: its true positions
    if (index.dim() != 1) throw std::runtime_error("index_put_(accumulate=True): attograd takes a mask over one dim only");
    index = true_positions(index);
  }
  if (index.dtype() != DType::Int64) throw nb::index_error("tensors used as indices must be long, int, byte or bool tensors");
  const int64_t n = self.size(at);
  std::vector<int64_t> pos;
  for (double p : index.to_double_vector()) {
    if (p < -n || p >= n)
      throw ag::IndexError("index " + std::to_string(static_cast<int64_t>(p)) + " is out of bounds for dimension " +
                           std::to_string(at) + " with size " + std::to_string(n));
    pos.push_back(static_cast<int64_t>(p < 0 ? p + n : p));
  }
  // values broadcast to what self[indices] reads: self's shape with the indexed dim replaced by
  // the positions, and an index of that shape holding each position along that dim.
  Shape target = self.shape();
  target[static_cast<size_t>(at)] = static_cast<int64_t>(pos.size());
  const Tensor v = value_for(values, self, target);
  Shape line(target.size(), 1);
  line[static_cast<size_t>(at)] = static_cast<int64_t>(pos.size());
  const Tensor where_to = ag::expand(Tensor::from_vector(pos, line), target).contiguous();
  std::vector<Tensor> operands;
  Tensor vt;
  if (nb::try_cast(values, vt)) operands.push_back(vt);
  ag::inplace_op(self, operands, false, [&](const Tensor& cur) {
    // self[..., pos[j], ...] += v[..., j, ...]  (scatter_add: repeated positions add up)
    return ag::scatter_add(cur, at, where_to, v);
  });
}

}  // namespace

void bind_indexing(nb::class_<ag::TensorImpl>& cls) {
  cls.def("__getitem__", [](const Tensor& self, nb::handle index) { return getitem(self, index); },
          nb::arg("index").none());
  cls.def("__setitem__", [](const Tensor& self, nb::handle index, nb::handle value) { setitem(self, index, value); },
          nb::arg("index").none(), nb::arg("value"));
  cls.def("index_put_", [](nb::handle self, nb::handle indices, nb::handle values, bool accumulate) {
    index_put(nb::cast<Tensor>(self), indices, values, accumulate);
    return nb::borrow(self);
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  cls.def("index_put", [](const Tensor& self, nb::handle indices, nb::handle values, bool accumulate) {
    const Tensor out = self.clone();
    index_put(out, indices, values, accumulate);
    return out;
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
}

}  // namespace agpy
