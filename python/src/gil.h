// The GIL across the boundary. Long C++ calls (backward, GEMMs) run with it released, so that
// other Python threads run meanwhile; the C++ code they reach may then call back into Python
// (a hook, a Function's backward), and may copy or drop the Python objects it holds (a graph
// freed during backward): PyRef and call_python take the GIL for that.
#pragma once
#include <memory>
#include <optional>

#include "common.h"

namespace agpy {

// A Python object owned by C++ code that may copy or drop it without the GIL.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(nb::handle h) : ref_(h.inc_ref().ptr(), Release{}) {}
  nb::handle get() const { return ref_.get(); }
  explicit operator bool() const { return ref_ != nullptr; }

 private:
  struct Release {
    void operator()(PyObject* o) const noexcept {
      if (nb::detail::cleanup_guard gil{}) Py_DECREF(o);  // not once the interpreter is gone
    }
  };
  std::shared_ptr<PyObject> ref_;
};

// Releases the GIL for its lifetime when `release` is true (a call big enough for it to pay).
class ReleaseGilIf {
 public:
  explicit ReleaseGilIf(bool release) {
    if (release) guard_.emplace();
  }

 private:
  std::optional<nb::gil_scoped_release> guard_;
};

}  // namespace agpy
