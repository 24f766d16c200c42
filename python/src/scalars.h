// Python numbers as operands of tensor ops: the value, and the kind (bool, int, float) that
// torch's type promotion looks at.
#pragma once
#include <optional>

#include "common.h"
#include "ints.h"

namespace agpy {

enum class ScalarKind { Bool, Int, Float };

struct Scalar {
  double value = 0;
  ScalarKind kind = ScalarKind::Float;
  // An int's exact value when it fits int64 (what an int64 tensor takes; the double rounds above
  // 2^53); empty for floats and for ints in [2^63, 2^64), which only a float tensor can hold.
  std::optional<int64_t> exact;
};

// A Python int as a Scalar: exact in int64, or a double up to 2^64, as torch converts scalars;
// further out torch's OverflowError.
inline Scalar int_scalar(nb::handle index_value) {
  if (const std::optional<int64_t> v = int64_if_fits(index_value))
    return Scalar{static_cast<double>(*v), ScalarKind::Int, *v};
  nb::object i = nb::steal(PyNumber_Index(index_value.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  if (PyObject_RichCompareBool(i.ptr(), nb::int_(0).ptr(), Py_LT) == 1 || nb::cast<int64_t>(i.attr("bit_length")()) > 64) {
    PyErr_SetString(PyExc_OverflowError, ("int too big to convert: " + describe_int(i) + " is outside [-2**63, 2**64)").c_str());
    throw nb::python_error();
  }
  return Scalar{PyLong_AsDouble(i.ptr()), ScalarKind::Int, std::nullopt};
}

// bool, int (anything with __index__, as NumPy's integers) or float (a Python float, NumPy's
// floats); anything else, a Tensor among them, is not a scalar.
inline std::optional<Scalar> scalar_from_python(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyFloat_Check(o)) return Scalar{PyFloat_AS_DOUBLE(o), ScalarKind::Float, std::nullopt};
  if (PyBool_Check(o)) return Scalar{o == Py_True ? 1.0 : 0.0, ScalarKind::Bool, o == Py_True ? 1 : 0};
  if (PyLong_Check(o)) return int_scalar(h);
  if (nb::inst_check(h)) return std::nullopt;  // a Tensor or another bound object
  if (PyIndex_Check(o)) return int_scalar(h);
  if (PyObject_HasAttrString(o, "__float__") && !PySequence_Check(o)) {
    const double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return Scalar{v, ScalarKind::Float, std::nullopt};
  }
  return std::nullopt;
}

// The value a scalar puts into an int64 tensor: an int exactly, a float truncated; out of int64's
// range torch's RuntimeError.
inline int64_t scalar_as_int64(const Scalar& s) {
  if (s.exact) return *s.exact;
  if (s.kind != ScalarKind::Float)
    throw std::runtime_error("value cannot be converted to type int64_t without overflow (" + std::to_string(s.value) + ")");
  return int64_from_double(s.value);
}

// A number argument (fill_'s value, masked_fill's value): its value, or TypeError naming `op`.
inline double scalar_value(nb::handle h, const char* op) {
  if (const std::optional<Scalar> s = scalar_from_python(h)) return s->value;
  throw nb::type_error((std::string(op) + "(): expected a number, got " +
                        nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                           .c_str());
}

}  // namespace agpy
