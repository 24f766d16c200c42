// What every binding source of attograd._C shares: how a Tensor and a dtype cross between
// Python and C++, the default dtype, and the declarations of the bind_* functions module.cpp
// calls.
//
// A Python Tensor is an instance of the bound class TensorImpl (named "Tensor"), reached through
// its shared_ptr: the same TensorImpl always comes back to Python as the same object while that
// object lives (nanobind keeps one instance per C++ pointer), so `x.grad is x.grad`, attributes
// set on a tensor, and Python subclasses (a later nn.Parameter) survive a trip through C++. An
// undefined C++ Tensor is None in Python.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/tensor.h"

namespace nb = nanobind;

namespace agpy {

// The dtype objects (attograd.float32, ...): one instance per ag::DType.
struct DTypeObject {
  ag::DType dtype;
};
// attograd.float32 etc. as Python objects (made by bind_dtype).
nb::handle dtype_object(ag::DType d);
// Python's dtype spellings: a dtype object, or float / int / bool (torch accepts those too).
std::optional<ag::DType> dtype_from_python(nb::handle h);

// torch.set_default_dtype / get_default_dtype: the dtype of float tensors made without one.
ag::DType default_dtype();
void set_default_dtype(ag::DType d);

}  // namespace agpy

namespace nanobind::detail {

template <> struct type_caster<ag::Tensor> {
  using Inner = make_caster<std::shared_ptr<ag::TensorImpl>>;
  NB_TYPE_CASTER(ag::Tensor, const_name("Tensor"))

  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    Inner inner;
    if (!inner.from_python(src, flags, cleanup)) return false;
    value = ag::Tensor(std::move(inner.value));
    return true;
  }
  static handle from_cpp(const ag::Tensor& t, rv_policy policy, cleanup_list* cleanup) noexcept {
    if (!t.defined()) return none().release();
    return Inner::from_cpp(t.impl_ptr(), policy, cleanup);
  }
};

template <> struct type_caster<ag::DType> {
  NB_TYPE_CASTER(ag::DType, const_name("dtype"))

  bool from_python(handle src, uint32_t, cleanup_list*) noexcept {
    const std::optional<ag::DType> d = agpy::dtype_from_python(src);
    if (!d) return false;
    value = *d;
    return true;
  }
  static handle from_cpp(ag::DType d, rv_policy, cleanup_list*) noexcept { return agpy::dtype_object(d).inc_ref(); }
};

}  // namespace nanobind::detail

namespace agpy {

// The shapes and dims torch accepts: an int, or a sequence of ints (a tuple, a list, a Size).
ag::Shape shape_from_python(nb::handle h, const char* what);
// None -> {} (all dims), an int -> {d}, a sequence -> its ints.
std::vector<int64_t> dims_from_python(nb::handle h);
// attograd.Size(shape): a tuple subclass defined in Python (attograd/_size.py), as torch.Size.
nb::object size_object(const ag::Shape& shape);

// An op bound twice, as torch has it: a Tensor method (self first) and an attograd.* function
// whose first argument is named `input`.
template <class F, class... Extra>
void def_both(nb::module_& m, nb::class_<ag::TensorImpl>& cls, const char* name, F f, const Extra&... extra) {
  cls.def(name, f, extra...);
  m.def(name, f, nb::arg("input"), extra...);
}

// The Tensor type's garbage-collector slots (gc.cpp).
int tensor_traverse(PyObject* self, visitproc visit, void* arg);
int tensor_clear(PyObject* self);

// The bind_* functions, in module.cpp's order. Each binds one part of the API onto `m`; a new
// part of the C++ API gets a function here and a line in module.cpp.
void bind_errors(nb::module_& m);
void bind_dtype(nb::module_& m);
void bind_tensor(nb::module_& m, nb::class_<ag::TensorImpl>& cls);
void bind_tensor_ops(nb::module_& m, nb::class_<ag::TensorImpl>& cls);
void bind_indexing(nb::class_<ag::TensorImpl>& cls);
void bind_sampling(nb::module_& m, nb::class_<ag::TensorImpl>& cls);
void bind_factories(nb::module_& m);
void bind_random(nb::module_& m);
void bind_numpy(nb::module_& m, nb::class_<ag::TensorImpl>& cls);
void bind_autograd(nb::module_& m, nb::class_<ag::TensorImpl>& cls);
void bind_function(nb::module_& m);
void bind_functional(nb::module_& m);
void bind_anomaly(nb::module_& m);
void bind_io(nb::module_& m);
void bind_nn(nb::module_& m);
void bind_nn_functional(nb::module_& m);
void bind_nn_utils(nb::module_& m);
void bind_optim(nb::module_& m);
void bind_models(nb::module_& m);
void bind_study(nb::module_& m);
void bind_training(nb::module_& m);
void bind_backends(nb::module_& m);

}  // namespace agpy
