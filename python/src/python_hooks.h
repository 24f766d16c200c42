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
    if (!fn.get()(leaf).is_none()) throw std::runtime_error("Tensor post accumulate grad hooks should return None.");
  }
};

// Where a node's gradients sit among the values its hooks see: a custom Function's outputs among
// everything its forward returned (non-Tensors seen as None), else one place each.
struct HookPlaces {
  std::vector<int> places;  // empty: the identity
  size_t count = 0;

  nb::tuple to_python(const std::vector<ag::Tensor>& grads) const {
    std::vector<nb::object> out(places.empty() ? grads.size() : count, nb::none());
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined()) out[places.empty() ? i : static_cast<size_t>(places[i])] = nb::cast(grads[i]);
    nb::list l;
    for (nb::object& o : out) l.append(o);
    return nb::tuple(l);
  }

  // A hook's result: None keeps the gradients (an empty list); else one value per place.
  std::vector<ag::Tensor> from_python(nb::handle r, size_t n, const char* what) const {
    if (r.is_none()) return {};
    std::vector<ag::Tensor> got;
    for (nb::handle h : nb::iter(r)) {
      ag::Tensor t;
      if (!h.is_none() && !nb::try_cast(h, t))
        throw nb::type_error((std::string(what) + " returned a " + nb::cast<std::string>(nb::str(h.type().attr("__name__"))) +
                              " where a Tensor or None was expected").c_str());
      got.push_back(t);
    }
    const size_t expected = places.empty() ? n : count;
    if (got.size() != expected)  // torch's words
      throw std::runtime_error(std::string(what) + " has returned an incorrect number of values (got " +
                               std::to_string(got.size()) + ", but expected " + std::to_string(expected) + ")");
    if (places.empty()) return got;
    std::vector<ag::Tensor> out;
    for (int p : places) out.push_back(got[static_cast<size_t>(p)]);
    return out;
  }
};

// grad_fn.register_prehook(fn): fn(grad_outputs) returns None or replacements.
struct PythonNodePreHook {
  PyRef fn;
  HookPlaces places;
  std::vector<ag::Tensor> operator()(const std::vector<ag::Tensor>& grad_outputs) const {
    nb::gil_scoped_acquire gil;
    return places.from_python(fn.get()(places.to_python(grad_outputs)), grad_outputs.size(), "a grad_fn pre-hook");
  }
};

// grad_fn.register_hook(fn): fn(grad_inputs, grad_outputs) returns None or replacement grad_inputs.
struct PythonNodePostHook {
  PyRef fn;
  HookPlaces places;  // of the grad_outputs
  std::vector<ag::Tensor> operator()(const std::vector<ag::Tensor>& grad_inputs,
                                     const std::vector<ag::Tensor>& grad_outputs) const {
    nb::gil_scoped_acquire gil;
    const HookPlaces one_each;
    nb::object r = fn.get()(one_each.to_python(grad_inputs), places.to_python(grad_outputs));
    return one_each.from_python(r, grad_inputs.size(), "a grad_fn hook");
  }
};

}  // namespace agpy
