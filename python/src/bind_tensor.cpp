// The Tensor class: its metadata, autograd properties, conversions to Python values and the
// in-place writes. The ops are in bind_tensor_ops.cpp, indexing in bind_indexing.cpp, hooks and
// backward in bind_autograd.cpp; repr, `to` and the rest written in Python are in
// python/attograd/_tensor.py.
#include <cmath>

#include "autograd/grad_lock.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "common.h"
#include "ints.h"
#include "scalars.h"

namespace agpy {

namespace {

using ag::Tensor;
using ag::TensorImpl;

// One element as the Python value torch's item() gives: float, int or bool.
nb::object element(const Tensor& t, int64_t offset) {
  switch (t.dtype()) {
    case ag::DType::Float32: return nb::float_(static_cast<const float*>(t.impl().storage->data)[offset]);
    case ag::DType::Float64: return nb::float_(static_cast<const double*>(t.impl().storage->data)[offset]);
    case ag::DType::Int64:
      return nb::steal(PyLong_FromLongLong(static_cast<const int64_t*>(t.impl().storage->data)[offset]));
    case ag::DType::Bool: return nb::bool_(static_cast<const bool*>(t.impl().storage->data)[offset]);
  }
  return nb::none();
}

nb::object tolist_rec(const Tensor& t, size_t d, int64_t offset) {
  if (d == t.shape().size()) return element(t, offset);
  nb::list out;
  for (int64_t i = 0; i < t.shape()[d]; ++i) out.append(tolist_rec(t, d + 1, offset + i * t.strides()[d]));
  return out;
}

nb::object item(const Tensor& t) {
  if (t.numel() != 1)
    throw std::invalid_argument("a Tensor with " + std::to_string(t.numel()) +
                                " elements cannot be converted to Scalar");
  return element(t, t.impl().offset);
}

}  // namespace

void bind_tensor(nb::module_& m, nb::class_<TensorImpl>& cls) {
  // Tensor(data): a tensor sharing data's storage, without its history (what a subclass such as
  // nn.Parameter is made from). The factories (attograd.tensor, zeros, ...) make the others.
  cls.def("__init__", [](TensorImpl* self, const Tensor& data) {
    new (self) TensorImpl();
    const TensorImpl& src = data.impl();
    self->storage = src.storage;
    self->offset = src.offset;
    self->shape = src.shape;
    self->strides = src.strides;
    self->dtype = src.dtype;
  }, nb::arg("data"));

  // ---- metadata ---------------------------------------------------------------------------------
  cls.def_prop_ro("shape", [](TensorImpl& t) { return size_object(t.shape); })
      .def("size", [](const Tensor& s, nb::handle dim) -> nb::object {
        if (dim.is_none()) return size_object(s.shape());
        return nb::int_(s.size(int64_arg(dim, "dim")));
      }, nb::arg("dim").none() = nb::none())
      .def_prop_ro("dtype", [](TensorImpl& t) { return t.dtype; })
      .def_prop_ro("ndim", [](TensorImpl& t) { return t.shape.size(); })
      .def("dim", [](TensorImpl& t) { return t.shape.size(); })
      .def("ndimension", [](TensorImpl& t) { return t.shape.size(); })
      .def("numel", [](TensorImpl& t) { return ag::shape_numel(t.shape); })
      .def("nelement", [](TensorImpl& t) { return ag::shape_numel(t.shape); })
      .def("__len__", [](TensorImpl& t) {
        if (t.shape.empty()) throw nb::type_error("len() of a 0-d tensor");
        return t.shape[0];
      })
      .def("stride", [](const Tensor& s, nb::handle dim) -> nb::object {
        if (dim.is_none()) return nb::tuple(nb::cast(s.strides()));
        const int64_t d = ag::wrap_dim(int64_arg(dim, "dim"), s.dim(), "stride", s);
        return nb::int_(s.strides()[static_cast<size_t>(d)]);
      }, nb::arg("dim").none() = nb::none())
      .def("element_size", [](TensorImpl& t) { return ag::dtype_size(t.dtype); })
      .def("is_contiguous", [](const Tensor& s) { return s.is_contiguous(); })
      .def("is_floating_point", [](TensorImpl& t) { return ag::is_floating(t.dtype); })
      .def("data_ptr", [](TensorImpl& t) {
        return reinterpret_cast<uintptr_t>(static_cast<char*>(t.storage->data) + t.offset * ag::dtype_size(t.dtype));
      })
      .def("storage_offset", [](TensorImpl& t) { return t.offset; })
      .def_prop_ro("_version", [](TensorImpl& t) { return t.storage->version; })
      .def_prop_rw("name", [](TensorImpl& t) { return t.name; }, [](TensorImpl& t, std::string n) { t.name = std::move(n); })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  // ---- autograd state ------------------------------------------------------------------------------
  // Through Tensor's accessors: a view whose base was written in place takes its new history
  // from the base first (autograd/tensor_inplace.cpp).
  cls.def_prop_rw(
         "requires_grad", [](const Tensor& s) { return s.requires_grad(); },
         [](Tensor s, bool on) {
           if (on && !ag::is_floating(s.dtype()))  // torch's Python texts (the C++ one is capitalised)
             throw std::runtime_error("only Tensors of floating point and complex dtype can require gradients");
           s.requires_grad_(on);
         })
      .def("requires_grad_", [](nb::handle self, bool on) {
        const Tensor t = nb::cast<Tensor>(self);
        if (on && !ag::is_floating(t.dtype()))
          throw std::runtime_error("only Tensors of floating point dtype can require gradients");
        t.requires_grad_(on);
        return nb::borrow(self);
      }, nb::arg("requires_grad") = true)
      .def_prop_ro("is_leaf", [](const Tensor& s) { return s.grad_fn() == nullptr || !s.requires_grad(); })
      // torch's view metadata: the tensor a view was made from (never a view itself; None for a
      // tensor that is no view). output_nr: bind_autograd.cpp.
      .def_prop_ro("_base", [](const Tensor& s) { return s._base(); })
      .def("_is_view", [](const Tensor& s) { return s.is_view(); })
      // Under the engine's accumulation lock (autograd/grad_lock.h): another Python thread's
      // backward, outside the GIL, may be adding into this .grad meanwhile.
      .def_prop_rw(
          "grad",
          [](const Tensor& s) {
            std::lock_guard<std::mutex> lock(ag::grad_accumulation_mutex(&s.impl()));
            return s.grad();
          },
          [](Tensor s, nb::handle value) {
            Tensor g;
            if (!value.is_none() && !nb::try_cast(value, g))  // torch's TypeError (a tutorial's `a.grad = 0.` meets it)
              throw nb::type_error(("assigned grad expected to be a Tensor or None but got grad of type " +
                                    nb::cast<std::string>(value.type().attr("__name__")))
                                       .c_str());
            std::lock_guard<std::mutex> lock(ag::grad_accumulation_mutex(&s.impl()));
            if (value.is_none()) return s.zero_grad();
            if (g.dtype() != s.dtype())
              throw std::runtime_error("assigned grad has data of a different type (" + ag::describe(g) + " for " +
                                       ag::describe(s) + ")");
            s.set_grad(g);
          },
          nb::arg("grad").none())
      .def("detach", [](const Tensor& s) { return s.detach(); })
      .def("detach_", [](nb::handle self) {
        TensorImpl& t = nb::cast<TensorImpl&>(self);
        t.grad_fn.reset();
        t.requires_grad = false;
        return nb::borrow(self);
      })
      .def_prop_rw(
          "data", [](const Tensor& s) { return s.detach(); },
          [](TensorImpl& t, nb::handle value) {
            // torch's `p.data = x`: p now views x's storage, keeping its own identity and autograd
            // state, with torch's checks here; a shape that no longer matches p's .grad or an
            // optimizer's state is refused where they meet (the engine's accumulation, step()).
            Tensor src;
            if (!nb::try_cast(value, src) || !src.defined())
              throw nb::type_error(("Variable data has to be a tensor, but got " +
                                    nb::cast<std::string>(nb::str(value.type().attr("__name__"))))
                                       .c_str());
            if (t.requires_grad && !ag::is_floating(src.dtype()))
              throw std::runtime_error("data set to a tensor that requires gradients must be floating point or complex dtype");
            const TensorImpl& s = src.impl();
            t.storage = s.storage;
            t.offset = s.offset;
            t.shape = s.shape;
            t.strides = s.strides;
            t.dtype = s.dtype;
          });

  // ---- conversions to Python values ---------------------------------------------------------------
  cls.def("item", [](const Tensor& s) { return item(s); })
      .def("tolist", [](const Tensor& s) { return tolist_rec(s, 0, s.impl().offset); })
      .def("__bool__", [](const Tensor& s) {
        if (s.numel() != 1) throw std::runtime_error("Boolean value of Tensor with more than one value is ambiguous");
        return nb::cast<double>(item(s)) != 0.0;
      })
      .def("__float__", [](const Tensor& s) { return nb::cast<double>(item(s)); })
      .def("__int__", [](const Tensor& s) {
        nb::object v = item(s);
        return nb::steal(PyNumber_Long(v.ptr()));
      })
      .def("__index__", [](const Tensor& s) {
        if (s.dtype() != ag::DType::Int64 && s.dtype() != ag::DType::Bool)
          throw nb::type_error("only integer tensors of a single element can be converted to an index");
        return item(s);
      })
      .def("contiguous", [](const Tensor& s) { return s.contiguous(); })
      .def("clone", [](const Tensor& s) { return s.clone(); })
      .def("_to_dtype", [](const Tensor& s, ag::DType d, bool copy) {
        if (d == s.dtype() && !copy) return s;
        return s.to(d);
      });

  // ---- in-place writes ---------------------------------------------------------------------------------
  // Recorded as the C++ API records them (torch's refusal of a leaf that requires grad included).
  cls.def("copy_", [](nb::handle self, const Tensor& src, bool non_blocking) {
        (void)non_blocking;  // nothing is asynchronous on the CPU
        nb::cast<Tensor>(self).copy_(src);  // src broadcast to this shape, as torch's
        return nb::borrow(self);
      }, nb::arg("src"), nb::arg("non_blocking") = false)
      .def("zero_", [](nb::handle self) {
        nb::cast<Tensor>(self).fill_(0.0);
        return nb::borrow(self);
      })
      .def("fill_", [](nb::handle self, nb::handle value) {
        nb::cast<Tensor>(self).fill_(scalar_value(value, "fill_"));
        return nb::borrow(self);
      }, nb::arg("value"));
  (void)m;
}

}  // namespace agpy
