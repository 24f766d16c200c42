// Tensors made from Python values and by the factories (zeros, ones, arange, ...) and the thread
// count (the random factories: bind_random.cpp). python/attograd/_factories.py gives them torch's
// signatures (sizes as varargs or one sequence, dtype and requires_grad as keywords).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "autograd/errors.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/parallel.h"
#include "base/memory_limit.h"
#include "common.h"
#include "ints.h"
#include "scalars.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Shape;
using ag::Tensor;

// torch's limit on the nesting of tensor()'s input ("too many dimensions 'list'" past it, measured
// on torch 2.15: 128 levels); it also bounds the recursion below, so no input overflows the stack.
constexpr int64_t kMaxNestedDims = 128;

std::string python_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

// The values of a nested sequence of numbers, with its shape and what kinds of numbers it held.
// Ints are kept exactly beside their double (an int64 tensor takes them exactly), floats once.
struct Nested {
  Shape shape;
  int64_t leaf_depth = -1;
  std::vector<double> floats;
  std::vector<int64_t> ints;  // an int's exact value, or 0 where is_int is false
  std::vector<char> is_int;   // ints[i] holds the value (bools and ints that fit int64)
  std::string int_overflow;   // the first int beyond int64 (it can only go into a float tensor)
  bool any_float = false, all_bool = true;
  std::vector<PyObject*> path;  // the sequences from the outermost to the one being walked

  void add(double v, std::optional<int64_t> exact) {
    floats.push_back(v);
    ints.push_back(exact ? *exact : 0);
    is_int.push_back(exact.has_value());
  }

  // Once the first number is reached the shape is known: its element count must fit, and the
  // memory for it be there, before the walk (a list that holds one list many times can describe
  // 2^60 numbers in a few lines, and would take forever to walk).
  void reserve_for_shape() {
    int64_t n = 1;
    for (int64_t d : shape)
      if (__builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 56))
        throw std::overflow_error("Storage size calculation overflowed with sizes=" + ag::shape_str(shape));
    const int64_t bytes = n * static_cast<int64_t>(sizeof(double) + sizeof(int64_t) + 1);
    static const ag::MemoryLimit limit = ag::memory_limit();  // read once: it does not change while a process runs
    if (bytes > limit.bytes)
      throw ag::OutOfMemoryError("can't allocate memory: tensor() of shape " + ag::shape_str(shape) + " needs " +
                                 ag::human_bytes(bytes) + " while it reads the values, more than the " +
                                 ag::human_bytes(limit.bytes) + " of " + limit.where);
    floats.reserve(static_cast<size_t>(n));
    ints.reserve(static_cast<size_t>(n));
    is_int.reserve(static_cast<size_t>(n));
  }

  void add_scalar(nb::handle h, int64_t depth) {
    if (leaf_depth < 0) {
      leaf_depth = depth;
      if (depth == static_cast<int64_t>(shape.size())) reserve_for_shape();
    }
    if (depth != leaf_depth || depth != static_cast<int64_t>(shape.size()))
      throw nb::value_error("expected a sequence of equal nesting: a number where a sequence was, or the reverse");
    Tensor t;
    if (nb::try_cast(h, t)) {
      if (t.numel() != 1) throw nb::value_error("only one element tensors can be converted to Python scalars");
      any_float |= ag::is_floating(t.dtype());
      all_bool &= t.dtype() == DType::Bool;
      if (t.dtype() == DType::Int64) {
        const int64_t v = *t.contiguous().data<int64_t>();
        return add(static_cast<double>(v), v);
      }
      const double v = t.item();
      return add(v, t.dtype() == DType::Bool ? std::optional<int64_t>(v != 0) : std::nullopt);
    }
    if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr())) {  // an int: exactly, or noted as beyond int64
      all_bool = false;
      if (const std::optional<int64_t> v = int64_if_fits(h)) return add(static_cast<double>(*v), *v);
      if (int_overflow.empty()) int_overflow = describe_int(h);
      nb::object i = nb::steal(PyNumber_Index(h.ptr()));
      const double v = PyLong_AsDouble(i.ptr());  // a float tensor may hold it; OverflowError past 1e308
      if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
      return add(v, std::nullopt);
    }
    const std::optional<Scalar> s = scalar_from_python(h);
    if (!s) throw nb::type_error(("Could not infer dtype of " + python_type_name(h)).c_str());
    any_float |= s->kind == ScalarKind::Float;
    all_bool &= s->kind == ScalarKind::Bool;
    add(s->value, s->exact);
  }

  void walk(nb::handle h, int64_t depth) {
    Tensor t;
    const bool is_tensor = nb::try_cast(h, t);
    const bool sequence = !is_tensor && (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h));
    if (!sequence) return add_scalar(h, depth);
    if (std::find(path.begin(), path.end(), h.ptr()) != path.end())
      throw nb::type_error(("tensor(): self-referential lists are incompatible (a " + python_type_name(h) +
                            " that contains itself, at depth " + std::to_string(depth) + ")")
                               .c_str());
    if (depth >= kMaxNestedDims)
      throw nb::value_error(("too many dimensions '" + python_type_name(h) + "': tensor() takes at most " +
                             std::to_string(kMaxNestedDims) + " levels of nesting, as torch")
                                .c_str());
    const int64_t n = static_cast<int64_t>(nb::len(h));
    if (depth == static_cast<int64_t>(shape.size())) {
      if (leaf_depth >= 0 && depth >= leaf_depth)
        throw nb::value_error("expected a sequence of equal nesting: a number where a sequence was, or the reverse");
      shape.push_back(n);
    } else if (shape[static_cast<size_t>(depth)] != n) {
      throw nb::value_error(("expected sequence of length " + std::to_string(shape[static_cast<size_t>(depth)]) +
                             " at dim " + std::to_string(depth) + " (got " + std::to_string(n) + ")")
                                .c_str());
    }
    // An empty sequence ends the shape here: (2, 0, ...) has no numbers to reach.
    if (n == 0 && leaf_depth < 0) {
      leaf_depth = depth + 1;
      reserve_for_shape();
    }
    path.push_back(h.ptr());
    for (nb::handle item : nb::iter(h)) walk(item, depth + 1);
    path.pop_back();
  }
};

Tensor from_nested(nb::handle data, std::optional<DType> dtype) {
  Nested v;
  v.walk(data, 0);
  // No element at all (torch.tensor([])) gives the default dtype, as torch's.
  const DType d = dtype                ? *dtype
                  : v.floats.empty()   ? default_dtype()
                  : v.any_float        ? default_dtype()
                  : v.all_bool         ? DType::Bool
                                       : DType::Int64;
  if (d == DType::Int64) {
    if (!v.int_overflow.empty())
      throw nb::value_error(("Overflow when unpacking long long: " + v.int_overflow +
                             " is outside int64's range, so no int64 tensor holds it (a float dtype can)")
                                .c_str());
    for (size_t i = 0; i < v.ints.size(); ++i)
      if (!v.is_int[i]) v.ints[i] = int64_from_double(v.floats[i]);
    return Tensor::from_vector(v.ints, v.shape);
  }
  return Tensor::from_vector(v.floats, v.shape, d);
}

DType float_or_default(std::optional<DType> d) { return d ? *d : default_dtype(); }

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// A double as a short text for messages ("inf", "nan", "1.5").
std::string number_text(double v) { return nb::cast<std::string>(nb::repr(nb::float_(v))); }

// torch.arange: the element count computed exactly (int64 arithmetic in 128 bits when all three
// are ints, else in double), refused with torch's messages when it is not a finite count that
// fits, and the tensor made (and its size checked) before it is filled in place.
Tensor arange(nb::handle start_h, nb::handle end_h, nb::handle step_h, std::optional<DType> dtype) {
  const std::optional<Scalar> start = scalar_from_python(start_h), end = scalar_from_python(end_h),
                              step = scalar_from_python(step_h);
  if (!start || !end || !step) throw nb::type_error("arange(): start, end and step must be numbers");
  const bool integral = start->exact && end->exact && step->exact;
  const DType d = dtype ? *dtype : (start->kind != ScalarKind::Float && end->kind != ScalarKind::Float &&
                                    step->kind != ScalarKind::Float)
                                       ? DType::Int64
                                       : default_dtype();
  int64_t n = 0;
  if (integral) {
    const __int128 s0 = *start->exact, e = *end->exact, st = *step->exact;
    if (st == 0) throw std::runtime_error("step must be nonzero");
    if ((st > 0 && e < s0) || (st < 0 && e > s0))
      throw std::runtime_error("upper bound and larger bound inconsistent with step sign");
    const __int128 count = st > 0 ? (e - s0 + st - 1) / st : (s0 - e - st - 1) / -st;
    if (count > INT64_MAX) throw std::runtime_error("invalid size, possible overflow?");
    n = static_cast<int64_t>(count);
  } else {
    if (!std::isfinite(start->value) || !std::isfinite(end->value))
      throw std::runtime_error("unsupported range: " + number_text(start->value) + " -> " + number_text(end->value));
    if (!std::isfinite(step->value)) throw std::runtime_error("step must be finite but got " + number_text(step->value));
    if (step->value == 0) throw std::runtime_error("step must be nonzero");
    const double span = (end->value - start->value) / step->value;
    if (span < 0 && std::ceil(span) != 0)
      throw std::runtime_error("upper bound and larger bound inconsistent with step sign");
    const double count = std::max(0.0, std::ceil(span));
    if (!(count < 9223372036854775808.0)) throw std::runtime_error("invalid size, possible overflow?");
    n = static_cast<int64_t>(count);
  }
  Tensor t = Tensor::empty({n}, d);
  if (d == DType::Int64 && integral) {
    int64_t* p = t.data<int64_t>();
    // start + i·step stays within [start, end): no overflow, in unsigned arithmetic.
    const uint64_t s0 = static_cast<uint64_t>(*start->exact), st = static_cast<uint64_t>(*step->exact);
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(s0 + static_cast<uint64_t>(i) * st);
    return t;
  }
  AG_DISPATCH_ALL(d, "arange", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      const double v = start->value + static_cast<double>(i) * step->value;
      if constexpr (std::is_same_v<scalar_t, int64_t>) p[i] = int64_from_double(v);
      else p[i] = static_cast<scalar_t>(v);
    }
  });
  return t;
}

}  // namespace

void bind_factories(nb::module_& m) {
  m.def("_tensor", [](nb::handle data, std::optional<DType> dtype, bool requires_grad) {
    return finish(from_nested(data, dtype), requires_grad);
  }, nb::arg("data"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_zeros", [](nb::handle size, std::optional<DType> dtype, bool requires_grad) {
    return finish(Tensor::zeros(shape_from_python(size, "zeros"), float_or_default(dtype)), requires_grad);
  }, nb::arg("size"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_ones", [](nb::handle size, std::optional<DType> dtype, bool requires_grad) {
    return finish(Tensor::ones(shape_from_python(size, "ones"), float_or_default(dtype)), requires_grad);
  }, nb::arg("size"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_empty", [](nb::handle size, std::optional<DType> dtype, bool requires_grad) {
    return finish(Tensor::empty(shape_from_python(size, "empty"), float_or_default(dtype)), requires_grad);
  }, nb::arg("size"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_full", [](nb::handle size, nb::handle fill_value, std::optional<DType> dtype, bool requires_grad) {
    const std::optional<Scalar> s = scalar_from_python(fill_value);
    if (!s) throw nb::type_error("full(): fill_value must be a number");
    const DType d = dtype ? *dtype
                          : s->kind == ScalarKind::Float ? default_dtype()
                          : s->kind == ScalarKind::Bool  ? DType::Bool
                                                         : DType::Int64;
    const Shape shape = shape_from_python(size, "full");
    if (d != DType::Int64) return finish(Tensor::full(shape, s->value, d), requires_grad);
    const int64_t v = scalar_as_int64(*s);  // exactly: a double rounds ints above 2^53
    Tensor t = Tensor::empty(shape, d);
    std::fill_n(t.data<int64_t>(), t.numel(), v);
    return finish(t, requires_grad);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_arange", [](nb::handle start, nb::handle end, nb::handle step, std::optional<DType> dtype, bool requires_grad) {
    return finish(arange(start, end, step, dtype), requires_grad);
  }, nb::arg("start"), nb::arg("end"), nb::arg("step"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_linspace", [](double start, double end, int64_t steps, std::optional<DType> dtype, bool requires_grad) {
    if (steps < 0) throw std::runtime_error("linspace(): number of steps must be non-negative");
    Tensor t = Tensor::empty({steps}, float_or_default(dtype));  // its size checked before any work
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    AG_DISPATCH_FLOAT(t.dtype(), "linspace", [&] {
      scalar_t* p = t.data<scalar_t>();
      // torch fills the second half from the end, so that the last value is `end` exactly.
      for (int64_t i = 0; i < steps; ++i)
        p[i] = static_cast<scalar_t>(i < steps / 2 ? start + step * static_cast<double>(i)
                                                   : end - step * static_cast<double>(steps - 1 - i));
    });
    return finish(t, requires_grad);
  }, nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_eye", [](int64_t n, std::optional<int64_t> cols, std::optional<DType> dtype, bool requires_grad) {
    const int64_t c = cols ? *cols : n;
    if (n < 0) throw std::runtime_error("n must be greater or equal to 0, got " + std::to_string(n));
    if (c < 0) throw std::runtime_error("m must be greater or equal to 0, got " + std::to_string(c));
    Tensor t = Tensor::zeros({n, c}, float_or_default(dtype));  // its size checked before any work
    AG_DISPATCH_ALL(t.dtype(), "eye", [&] {
      scalar_t* p = t.data<scalar_t>();
      for (int64_t i = 0; i < std::min(n, c); ++i) p[i * c + i] = scalar_t(1);
    });
    return finish(t, requires_grad);
  }, nb::arg("n"), nb::arg("m").none(), nb::arg("dtype").none(), nb::arg("requires_grad"));

  m.def("set_num_threads", [](int n) {
    if (n <= 0) throw std::runtime_error("set_num_threads expects a positive integer");
    ag::parallel::set_num_threads(n);
  }, nb::arg("num"), "The threads of attograd's pool, the caller's among them (torch.set_num_threads).");
  m.def("get_num_threads", [] { return ag::parallel::num_threads(); });
  // A pool of one thread per core, with OpenBLAS on one thread inside each chunk, as the
  // attograd program runs (autograd/parallel.h).
  ag::parallel::init_threads(0);
}

}  // namespace agpy
