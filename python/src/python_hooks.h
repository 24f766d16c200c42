// Python callables as the engine's hooks. Named types (not lambdas), so that the garbage collector's
// traversal of a tensor (gc.cpp) can find the Python objects a graph holds for it.
#pragma once
#include "autograd/tensor.h"
#include "common.h"
#include "gil.h"

namespace agpy {

// Tensor.register_hook(fn): fn(grad) returns None (keep it) or a replacement gradient.
struct PythonGradHook {
  PyRef fn;
  ag::Tensor operator()(const ag::Tensor& grad) const {
    nb::gil_scoped_acquire gil;
    nb::object r = fn.get()(grad);
    if (r.is_none()) return ag::Tensor();
    ag::Tensor t;
    if (!nb::try_cast(r, t))
      throw nb::type_error(("a hook returned " + nb::cast<std::string>(nb::str(r.type().attr("__name__"))) +
                            ": it must return a Tensor or None")
                               .c_str());
    return t;
  }
};

// Tensor.register_post_accumulate_grad_hook(fn): fn(leaf) once its .grad holds this pass's gradient.
struct PythonPostAccumulateHook {
  PyRef fn;
  void operator()(const ag::Tensor& leaf) const {
    nb::gil_scoped_acquire gil;
    fn.get()(leaf);
  }
};

}  // namespace agpy
