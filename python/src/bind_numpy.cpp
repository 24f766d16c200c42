// NumPy and DLPack, without copies in either direction, as torch's from_numpy, Tensor.numpy(),
// from_dlpack and __dlpack__: the tensor and the array share memory, so a write through one is
// seen by the other, and the memory lives as long as either does.
//
// In: the array (a NumPy array, or anything with __dlpack__: a torch tensor) becomes a Storage
// that borrows its memory and keeps a reference to it. Out: a NumPy array or a DLPack capsule
// whose owner keeps the tensor's storage alive.
#include <nanobind/ndarray.h>

#include <bit>

#include "autograd/errors.h"
#include "common.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Tensor;

using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

std::optional<DType> dtype_of(const nb::dlpack::dtype& d) {
  if (d == nb::dtype<float>()) return DType::Float32;
  if (d == nb::dtype<double>()) return DType::Float64;
  if (d == nb::dtype<int64_t>()) return DType::Int64;
  if (d == nb::dtype<bool>()) return DType::Bool;
  return std::nullopt;
}

nb::dlpack::dtype dlpack_dtype(DType d) {
  switch (d) {
    case DType::Float32: return nb::dtype<float>();
    case DType::Float64: return nb::dtype<double>();
    case DType::Int64: return nb::dtype<int64_t>();
    case DType::Bool: return nb::dtype<bool>();
  }
  return nb::dtype<float>();
}

Tensor from_array(const AnyArray& a) {
  const std::optional<DType> dtype = dtype_of(a.dtype());
  if (!dtype)
    throw ag::TypeError("can't convert an array of this element type (DLPack code " + std::to_string(a.dtype().code) +
                        ", " + std::to_string(a.dtype().bits) +
                        " bits): attograd's types are float64, float32, int64 and bool");
  ag::Shape shape(a.ndim()), strides(a.ndim());
  int64_t extent = 1;  // elements from the first to one past the last
  bool empty = false;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    if (strides[i] < 0)
      throw ag::ValueError(
          "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
          "currently supported. (You can probably work around this by making a copy of your array with array.copy().) ");
    empty |= shape[i] == 0;
    extent += (shape[i] - 1) * strides[i];
  }
  const size_t esz = ag::dtype_size(*dtype);
  void* data = const_cast<void*>(a.data());
  if (reinterpret_cast<uintptr_t>(data) % esz != 0)
    throw ag::ValueError("the array's data is not aligned to its element size; pass a copy (array.copy())");
  // The storage keeps its own reference to the array; dropping it may free the array's memory,
  // which is Python's business, hence the GIL (the last tensor may die with the GIL released).
  auto* keep = new AnyArray(a);
  auto storage = std::make_shared<ag::Storage>(data, empty ? 0 : static_cast<size_t>(extent) * esz, [keep] {
    if (nb::detail::cleanup_guard gil{}) delete keep;
  });
  auto impl = std::make_shared<ag::TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = *dtype;
  return Tensor(std::move(impl));
}

// An array object of `Framework` on t's memory; its owner keeps t's storage alive.
template <class Framework> nb::ndarray<Framework> export_array(const Tensor& t) {
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  const std::vector<int64_t>& strides = t.strides();
  nb::capsule owner(new Tensor(t.detach()), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<Framework>(t.raw_data(), shape.size(), shape.data(), owner, strides.data(), dlpack_dtype(t.dtype()));
}

// A NumPy array's byte order and writability, checked before its memory is shared (nanobind's
// conversion would refuse a foreign byte order with a message that never says why, and a tensor
// on read-only memory, a read-only memory map or np.frombuffer over an immutable bytes object,
// would let fill_ write where nothing may). Read-only memory is copied, with a warning naming why;
// a foreign byte order is refused with torch's message. Other producers (__dlpack__) share.
Tensor from_python_array(nb::handle obj, const char* fn) {
  const bool numpy = nb::hasattr(obj, "__array_interface__") && nb::hasattr(obj, "flags") && nb::hasattr(obj, "dtype");
  if (numpy) {
    const std::string order = nb::cast<std::string>(nb::str(obj.attr("dtype").attr("byteorder")));
    const bool little = std::endian::native == std::endian::little;
    if ((order == ">" && little) || (order == "<" && !little))
      throw ag::ValueError(std::string(fn) +
                           ": given numpy array has byte order different from the native byte order. Conversion "
                           "between byte orders is currently not supported. (array.astype(array.dtype.newbyteorder("
                           "'=')) makes a native copy)");
    if (!nb::cast<bool>(obj.attr("flags").attr("writeable"))) {
      if (PyErr_WarnEx(PyExc_UserWarning,
                       (std::string(fn) +
                        ": the given NumPy array is not writable (a read-only memory map, or np.frombuffer over an "
                        "immutable bytes object), so attograd copied it: a tensor on its memory would let an in-place "
                        "op write where nothing may. Writes to the tensor do not reach the array.")
                           .c_str(),
                       1) < 0)
        throw nb::python_error();
      nb::object copy = obj.attr("copy")();
      return from_array(nb::cast<AnyArray>(copy, false));
    }
  }
  AnyArray a;
  if (!nb::try_cast(obj, a, false))
    throw ag::TypeError(std::string(fn) + ": expected a NumPy array or an object with __dlpack__ on the CPU, got " +
                        nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  return from_array(a);
}

}  // namespace

void bind_numpy(nb::module_& m, nb::class_<ag::TensorImpl>& cls) {
  m.def("from_numpy", [](nb::handle a) { return from_python_array(a, "from_numpy"); }, nb::arg("ndarray"),
        "A tensor on the array's memory, without a copy: writes through either are seen by both.");
  m.def("from_dlpack", [](nb::handle a) { return from_python_array(a, "from_dlpack"); }, nb::arg("ext_tensor"),
        "A tensor on the memory of any object with __dlpack__ (a torch tensor, a NumPy array), without a copy.");
  cls.def("numpy", [](const Tensor& t, bool force) {
    if (t.requires_grad() && !force)
      throw std::runtime_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
    return export_array<nb::numpy>(t);
  }, nb::kw_only(), nb::arg("force") = false);
  // numpy.asarray(t) and numpy.array(t) (which copies): NumPy asks for __array__.
  cls.def("__array__", [](const Tensor& t, nb::handle dtype, nb::handle copy) -> nb::object {
    if (t.requires_grad())
      throw std::runtime_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
    nb::object arr = nb::cast(export_array<nb::numpy>(t));
    if (!dtype.is_none()) arr = arr.attr("astype")(dtype, nb::arg("copy") = false);
    if (!copy.is_none() && nb::cast<bool>(copy)) arr = arr.attr("copy")();
    return arr;
  }, nb::arg("dtype").none() = nb::none(), nb::kw_only(), nb::arg("copy").none() = nb::none());
  cls.def("__dlpack__", [](const Tensor& t, nb::kwargs kwargs) {
    if (t.requires_grad()) throw std::runtime_error("Can't export tensors that require gradient, use tensor.detach()");
    nb::object arr = nb::cast(export_array<nb::array_api>(t));
    return arr.attr("__dlpack__")(**kwargs);
  });
  cls.def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); });  // kDLCPU, device 0
}

}  // namespace agpy
