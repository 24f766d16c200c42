#include "ints.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace agpy {

std::string describe_int(nb::handle h) {
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  const int64_t bits = nb::cast<int64_t>(i.attr("bit_length")());
  if (bits > 256) return "an int of " + std::to_string(bits) + " bits";  // Python refuses to print huge ones
  return nb::cast<std::string>(nb::str(i));
}

std::optional<int64_t> int64_if_fits(nb::handle h) {
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

int64_t int64_arg(nb::handle h, const char* what) {
  if (PyFloat_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
    throw nb::type_error((std::string(what) + " must be an int, not " +
                          nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                             .c_str());
  if (const std::optional<int64_t> v = int64_if_fits(h)) return *v;
  throw nb::value_error(("Overflow when unpacking long long: " + std::string(what) + " " + describe_int(h) +
                         " is outside int64's range [-2**63, 2**63 - 1]")
                            .c_str());
}

int64_t int64_from_double(double v) {
  // Every double in [-2^63, 2^63) truncates into int64; NaN and the rest do not.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    throw std::runtime_error("value cannot be converted to type int64_t without overflow (" + std::to_string(v) + ")");
  return static_cast<int64_t>(v);
}

}  // namespace agpy
