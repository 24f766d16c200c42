// Tensors made from Python values and by the factories (zeros, ones, randn, arange, ...), the
// random seed and the thread count. python/attograd/_factories.py gives them torch's
// signatures (sizes as varargs or one sequence, dtype and requires_grad as keywords).
#include <cmath>

#include "autograd/parallel.h"
#include "autograd/random.h"
#include "common.h"
#include "scalars.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Shape;
using ag::Tensor;

// The values of a nested sequence of numbers, with its shape and what kinds of numbers it held.
struct Nested {
  Shape shape;
  int64_t leaf_depth = -1;
  std::vector<double> floats;
  std::vector<int64_t> ints;  // exact int64 values, beside floats (for int64 tensors)
  bool any_float = false, all_bool = true;

  void add_scalar(nb::handle h, int64_t depth) {
    if (leaf_depth < 0) leaf_depth = depth;
    if (depth != leaf_depth || depth != static_cast<int64_t>(shape.size()))
      throw nb::value_error("expected a sequence of equal nesting: a number where a sequence was, or the reverse");
    Tensor t;
    if (nb::try_cast(h, t)) {
      if (t.numel() != 1) throw nb::value_error("only one element tensors can be converted to Python scalars");
      any_float |= ag::is_floating(t.dtype());
      all_bool &= t.dtype() == DType::Bool;
      floats.push_back(t.item());
      ints.push_back(static_cast<int64_t>(t.item()));
      return;
    }
    const std::optional<Scalar> s = scalar_from_python(h);
    if (!s)
      throw nb::type_error(("Could not infer dtype of " + nb::cast<std::string>(nb::str(h.type().attr("__name__")))).c_str());
    any_float |= s->kind == ScalarKind::Float;
    all_bool &= s->kind == ScalarKind::Bool;
    floats.push_back(s->value);
    ints.push_back(s->kind == ScalarKind::Float ? static_cast<int64_t>(s->value) : nb::cast<int64_t>(nb::int_(h)));
  }

  void walk(nb::handle h, int64_t depth) {
    Tensor t;
    const bool is_tensor = nb::try_cast(h, t);
    const bool sequence = !is_tensor && (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h));
    if (!sequence) return add_scalar(h, depth);
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
    for (nb::handle item : nb::iter(h)) walk(item, depth + 1);
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
  if (d == DType::Int64) return Tensor::from_vector(v.ints, v.shape);
  return Tensor::from_vector(v.floats, v.shape, d);
}

DType float_or_default(std::optional<DType> d) { return d ? *d : default_dtype(); }

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
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
    return finish(Tensor::full(shape_from_python(size, "full"), s->value, d), requires_grad);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_randn", [](nb::handle size, std::optional<DType> dtype, bool requires_grad) {
    return finish(Tensor::randn(shape_from_python(size, "randn"), float_or_default(dtype)), requires_grad);
  }, nb::arg("size"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_rand", [](nb::handle size, std::optional<DType> dtype, bool requires_grad) {
    return finish(Tensor::rand(shape_from_python(size, "rand"), float_or_default(dtype)), requires_grad);
  }, nb::arg("size"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_randint", [](int64_t low, int64_t high, nb::handle size, std::optional<DType> dtype) {
    if (low >= high)
      throw std::runtime_error("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
                               " >= to=" + std::to_string(high));
    Tensor t = Tensor::randint(low, high, shape_from_python(size, "randint"));
    return dtype && *dtype != DType::Int64 ? t.to(*dtype) : t;
  }, nb::arg("low"), nb::arg("high"), nb::arg("size"), nb::arg("dtype").none());
  m.def("_arange", [](nb::handle start_h, nb::handle end_h, nb::handle step_h, std::optional<DType> dtype,
                      bool requires_grad) {
    std::optional<Scalar> start = scalar_from_python(start_h), end = scalar_from_python(end_h),
                          step = scalar_from_python(step_h);
    if (!start || !end || !step) throw nb::type_error("arange(): start, end and step must be numbers");
    if (step->value == 0) throw std::runtime_error("step must be nonzero");
    const bool integral = start->kind != ScalarKind::Float && end->kind != ScalarKind::Float && step->kind != ScalarKind::Float;
    const double span = (end->value - start->value) / step->value;
    if (span < 0 && std::ceil(span) != 0)
      throw std::runtime_error("upper bound and larger bound inconsistent with step sign");
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(span)));
    const DType d = dtype ? *dtype : integral ? DType::Int64 : default_dtype();
    if (d == DType::Int64) {
      std::vector<int64_t> v(static_cast<size_t>(n));
      const int64_t s0 = static_cast<int64_t>(start->value), st = static_cast<int64_t>(step->value);
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = s0 + i * st;
      return finish(Tensor::from_vector(v, {n}), requires_grad);
    }
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start->value + static_cast<double>(i) * step->value;
    return finish(Tensor::from_vector(v, {n}, d), requires_grad);
  }, nb::arg("start"), nb::arg("end"), nb::arg("step"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_linspace", [](double start, double end, int64_t steps, std::optional<DType> dtype, bool requires_grad) {
    if (steps < 0) throw std::runtime_error("linspace(): number of steps must be non-negative");
    std::vector<double> v(static_cast<size_t>(steps));
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    // torch fills the second half from the end, so that the last value is `end` exactly.
    for (int64_t i = 0; i < steps; ++i)
      v[static_cast<size_t>(i)] = i < steps / 2 ? start + step * static_cast<double>(i)
                                                : end - step * static_cast<double>(steps - 1 - i);
    return finish(Tensor::from_vector(v, {steps}, float_or_default(dtype)), requires_grad);
  }, nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::arg("dtype").none(), nb::arg("requires_grad"));
  m.def("_eye", [](int64_t n, std::optional<int64_t> cols, std::optional<DType> dtype, bool requires_grad) {
    const int64_t c = cols ? *cols : n;
    std::vector<double> v(static_cast<size_t>(n * c), 0.0);
    for (int64_t i = 0; i < std::min(n, c); ++i) v[static_cast<size_t>(i * c + i)] = 1.0;
    return finish(Tensor::from_vector(v, {n, c}, float_or_default(dtype)), requires_grad);
  }, nb::arg("n"), nb::arg("m").none(), nb::arg("dtype").none(), nb::arg("requires_grad"));

  m.def("manual_seed", [](uint64_t seed) { ag::manual_seed(seed); }, nb::arg("seed"),
        "Seeds attograd's default generator (xoshiro256**: its numbers are attograd's own, not torch's).");
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
