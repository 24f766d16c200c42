// The dtype objects (attograd.float32, float64, int64, bool), the default dtype, and the
// conversions of shapes and dims from Python that every binding uses.
#include <array>
#include <atomic>

#include "common.h"
#include "ints.h"

namespace agpy {

namespace {
std::array<nb::handle, 4> g_dtype_objects;  // owned by the module (its attributes)
std::atomic<ag::DType> g_default_dtype{ag::DType::Float32};
nb::handle g_size_type;  // attograd.Size, registered by the package at import

const char* torch_name(ag::DType d) {
  switch (d) {
    case ag::DType::Float32: return "attograd.float32";
    case ag::DType::Float64: return "attograd.float64";
    case ag::DType::Int64: return "attograd.int64";
    case ag::DType::Bool: return "attograd.bool";
  }
  return "attograd.?";
}
}  // namespace

nb::handle dtype_object(ag::DType d) { return g_dtype_objects[static_cast<size_t>(d)]; }

std::optional<ag::DType> dtype_from_python(nb::handle h) {
  if (nb::inst_check(h) && h.type().is(g_dtype_objects[0].type())) return nb::inst_ptr<DTypeObject>(h)->dtype;
  // torch's shorthands: the Python types float, int and bool.
  if (h.is(reinterpret_cast<PyObject*>(&PyFloat_Type))) return ag::DType::Float64;
  if (h.is(reinterpret_cast<PyObject*>(&PyLong_Type))) return ag::DType::Int64;
  if (h.is(reinterpret_cast<PyObject*>(&PyBool_Type))) return ag::DType::Bool;
  return std::nullopt;
}

ag::DType default_dtype() { return g_default_dtype.load(); }
void set_default_dtype(ag::DType d) { g_default_dtype = d; }

namespace {
// One int of a shape or a dims list, exactly (ints.h); a size beyond int64 is torch's TypeError.
int64_t shape_element(nb::handle item, const char* what, bool sizes) {
  if (const std::optional<int64_t> v = int64_if_fits(item)) return *v;
  const std::string msg = std::string(what) + ": failed to unpack " + describe_int(item) +
                          " (Overflow when unpacking long long: outside int64's range)";
  if (sizes) throw nb::type_error(msg.c_str());
  throw nb::value_error(msg.c_str());
}

ag::Shape ints_from_python(nb::handle h, const char* what, bool sizes) {
  ag::Shape shape;
  if (PyLong_Check(h.ptr())) {
    shape.push_back(shape_element(h, what, sizes));
    return shape;
  }
  if (!PySequence_Check(h.ptr()) || nb::isinstance<nb::str>(h))
    throw nb::type_error((std::string(what) + ": expected a sequence of ints, got " +
                          nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                             .c_str());
  for (nb::handle item : nb::iter(h)) {
    if (!PyIndex_Check(item.ptr()) || PyBool_Check(item.ptr()))
      throw nb::type_error((std::string(what) + ": expected a sequence of ints, but an element is " +
                            nb::cast<std::string>(nb::str(item.type().attr("__name__"))))
                               .c_str());
    shape.push_back(shape_element(item, what, sizes));
  }
  return shape;
}
}  // namespace

ag::Shape shape_from_python(nb::handle h, const char* what) { return ints_from_python(h, what, true); }

std::vector<int64_t> dims_from_python(nb::handle h) {
  if (h.is_none()) return {};
  return ints_from_python(h, "dim", false);
}

nb::object size_object(const ag::Shape& shape) {
  nb::tuple t = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(t.ptr(), i, PyLong_FromLongLong(shape[i]));
  if (!g_size_type) return t;
  return g_size_type(t);
}

void bind_dtype(nb::module_& m) {
  nb::class_<DTypeObject>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const DTypeObject& d) { return ag::is_floating(d.dtype); })
      .def_prop_ro("itemsize", [](const DTypeObject& d) { return ag::dtype_size(d.dtype); })
      .def("__repr__", [](const DTypeObject& d) { return torch_name(d.dtype); })
      .def("__reduce__", [](const DTypeObject& d) { return std::string(ag::dtype_name(d.dtype)); });
  for (ag::DType d : {ag::DType::Float32, ag::DType::Float64, ag::DType::Int64, ag::DType::Bool}) {
    nb::object o = nb::cast(DTypeObject{d});
    m.attr(ag::dtype_name(d)) = o;
    g_dtype_objects[static_cast<size_t>(d)] = o;  // the module's attribute keeps it alive
  }
  m.def("get_default_dtype", [] { return default_dtype(); }, "The dtype of float tensors made without one.");
  m.def(
      "set_default_dtype",
      [](ag::DType d) {
        if (!ag::is_floating(d))
          throw nb::type_error("only floating-point types are supported as the default type");
        set_default_dtype(d);
      },
      nb::arg("d"));
  m.def("_set_size_type", [](nb::handle t) { g_size_type = t.inc_ref(); });
}

}  // namespace agpy
