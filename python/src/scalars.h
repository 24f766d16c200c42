// Python numbers as operands of tensor ops: the value, and the kind (bool, int, float) that
// torch's type promotion looks at.
#pragma once
#include <optional>

#include "common.h"

namespace agpy {

enum class ScalarKind { Bool, Int, Float };

struct Scalar {
  double value = 0;
  ScalarKind kind = ScalarKind::Float;
};

// bool, int (anything with __index__, as NumPy's integers) or float (a Python float, NumPy's
// floats); anything else, a Tensor among them, is not a scalar.
inline std::optional<Scalar> scalar_from_python(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyFloat_Check(o)) return Scalar{PyFloat_AS_DOUBLE(o), ScalarKind::Float};
  if (PyBool_Check(o)) return Scalar{o == Py_True ? 1.0 : 0.0, ScalarKind::Bool};
  if (PyLong_Check(o)) {
    const double v = PyLong_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return Scalar{v, ScalarKind::Int};
  }
  if (nb::inst_check(h)) return std::nullopt;  // a Tensor or another bound object
  if (PyIndex_Check(o)) {
    nb::object i = nb::steal(PyNumber_Index(o));
    if (!i.is_valid()) throw nb::python_error();
    return Scalar{PyLong_AsDouble(i.ptr()), ScalarKind::Int};
  }
  if (PyObject_HasAttrString(o, "__float__") && !PySequence_Check(o)) {
    const double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return Scalar{v, ScalarKind::Float};
  }
  return std::nullopt;
}

// A number argument (fill_'s value, masked_fill's value): its value, or TypeError naming `op`.
inline double scalar_value(nb::handle h, const char* op) {
  if (const std::optional<Scalar> s = scalar_from_python(h)) return s->value;
  throw nb::type_error((std::string(op) + "(): expected a number, got " +
                        nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                           .c_str());
}

}  // namespace agpy
