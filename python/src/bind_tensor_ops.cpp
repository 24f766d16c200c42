// The ops, as Tensor methods and as attograd.* functions (torch's names and keywords), and
// Python's operators. Each op is one lambda bound twice by def_both (common.h): as a method (self
// first) and as a function (its first argument named `input`, as torch's).
//
// attograd's kernels are floating-point; what torch does on integer and bool tensors that is
// exact in float64 (sums, max, comparisons, where) is done there and converted back (arith.h).
#include <cmath>
#include <limits>

#include "arith.h"
#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/ops.h"
#include "common.h"
#include "ints.h"
#include "gil.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Shape;
using ag::Tensor;
using ag::TensorImpl;

// A GEMM this large (multiply-adds) releases the GIL: below it the release costs more than it frees.
constexpr double kGemmReleaseWork = 32768;

// torch.return_types.max / min: named tuples (values, indices), made once at import. The module
// owns them (its attribute _return_types), so no static object outlives the interpreter.
nb::handle g_return_types;

nb::object return_type(const char* name) { return nb::borrow<nb::dict>(g_return_types)[name]; }

void make_return_types(nb::module_& m) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  nb::dict types;
  for (const char* name : {"max", "min"})
    types[name] = namedtuple(name, nb::make_tuple("values", "indices"), nb::arg("module") = "attograd.return_types");
  m.attr("_return_types") = types;
  g_return_types = types;
}

// A float tensor for the float-only unary ops (exp, log, ...): integers become the default dtype.
Tensor floating(const Tensor& a) { return ag::is_floating(a.dtype()) ? a : a.to(default_dtype()); }

// Runs a float op on an integer tensor through float64 and converts back (relu, abs, neg of int64).
template <class F> Tensor keep_integer(const Tensor& a, const char* op, F f) {
  if (ag::is_floating(a.dtype())) return f(a);
  if (a.dtype() == DType::Bool) throw std::runtime_error(std::string(op) + ": not supported for bool tensors");
  ag::NoGradGuard no_grad;
  return float64_to_int64_exact(f(a.to(DType::Float64)), op);
}

// An integer or bool tensor's reduction through float64, back to int64 (sums) or the input's dtype
// (max, min).
template <class F> Tensor reduce_integer(const Tensor& a, DType out, const char* op, F f) {
  if (ag::is_floating(a.dtype())) return f(a);
  ag::NoGradGuard no_grad;
  Tensor r = f(a.to(DType::Float64));
  if (out == DType::Bool) return ag::ne(r, 0.0);
  return float64_to_int64_exact(r, op);
}

// `x.reshape(2, 3)` and `x.reshape((2, 3))` alike.
Shape varargs_shape(const nb::args& args, const char* what) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return shape_from_python(args[0], what);
  return shape_from_python(args, what);
}

Tensor squeeze_dim(const Tensor& a, int64_t dim) {
  const int64_t d = ag::wrap_dim(dim, std::max<int64_t>(a.dim(), 1), "squeeze", a);
  if (a.dim() > 0 && a.size(d) == 1) return ag::squeeze(a, d);
  return ag::view(a, a.shape());  // torch returns the tensor unchanged (a view)
}

Tensor flatten(const Tensor& a, int64_t start, int64_t end) {
  if (a.dim() == 0) return ag::view(a, {1});
  const int64_t s = ag::wrap_dim(start, a.dim(), "flatten", a), e = ag::wrap_dim(end, a.dim(), "flatten", a);
  if (s > e) throw std::runtime_error("flatten() has invalid args: start_dim cannot come after end_dim");
  Shape shape(a.shape().begin(), a.shape().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= a.size(i);
  shape.push_back(n);
  shape.insert(shape.end(), a.shape().begin() + e + 1, a.shape().end());
  return ag::view_or_copy(a, shape);
}

Tensor expand_to(const Tensor& a, Shape sizes) {
  // -1 keeps a dim's size, as torch's expand.
  const int64_t lead = static_cast<int64_t>(sizes.size()) - a.dim();
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i)
    if (sizes[static_cast<size_t>(i)] == -1 && i >= lead) sizes[static_cast<size_t>(i)] = a.size(i - lead);
  return ag::expand(a, sizes);
}

Tensor matmul_gil_released(const Tensor& a, const Tensor& b) {
  const double work = static_cast<double>(a.numel()) * (b.dim() > 0 ? static_cast<double>(b.shape().back()) : 1.0);
  ReleaseGilIf release(work >= kGemmReleaseWork);
  return ag::matmul(a, b);
}

// torch's triangular masks, as `where` of the input and zeros (differentiable).
Tensor triangle(const Tensor& a, int64_t diagonal, bool lower) {
  if (a.dim() < 2) throw std::runtime_error(std::string(lower ? "tril" : "triu") + ": input tensor must have at least 2 dimensions");
  const int64_t rows = a.size(-2), cols = a.size(-1);
  Tensor keep = Tensor::empty({rows, cols}, DType::Bool);
  bool* k = keep.data<bool>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) k[i * cols + j] = lower ? (j - i <= diagonal) : (j - i >= diagonal);
  if (!ag::is_floating(a.dtype())) {
    ag::NoGradGuard no_grad;
    return reduce_integer(a, a.dtype(), lower ? "tril" : "triu", [&](const Tensor& x) {
      return ag::where(keep, x, Tensor::zeros({}, x.dtype()));
    });
  }
  return ag::where(keep, a, Tensor::zeros({}, a.dtype()));
}

Tensor to_bool_tensor(const Tensor& a, const char* op) {
  if (a.dtype() != DType::Bool)
    throw std::runtime_error(std::string(op) + ": attograd's logical and bitwise operators take bool tensors, got " +
                             ag::describe(a));
  return a;
}

// The bool ops as comparisons of their 0/1 values in float64.
Tensor logical(const Tensor& a, const Tensor& b, char op) {
  ag::NoGradGuard no_grad;
  const Tensor x = to_bool_tensor(a, "logical op").to(DType::Float64), y = to_bool_tensor(b, "logical op").to(DType::Float64);
  switch (op) {
    case '&': return ag::ne(ag::mul(x, y), 0.0);
    case '|': return ag::ne(ag::add(x, y), 0.0);
    default: return ag::ne(x, y);  // '^'
  }
}
Tensor logical_with(const Tensor& a, nb::handle other, char op) {
  Tensor b;
  if (!nb::try_cast(other, b)) {
    if (!PyBool_Check(other.ptr())) throw nb::type_error("logical operators take bool tensors or bools");
    b = Tensor::scalar(other.ptr() == Py_True ? 1.0 : 0.0, DType::Float64).to(DType::Bool);
  }
  return logical(a, b, op);
}

Tensor compare(const Tensor& a, nb::handle other, int which) {
  Tensor b;
  if (nb::try_cast(other, b)) {
    switch (which) {
      case 0: return ag::eq(a, b);
      case 1: return ag::ne(a, b);
      case 2: return ag::lt(a, b);
      case 3: return ag::le(a, b);
      case 4: return ag::gt(a, b);
      default: return ag::ge(a, b);
    }
  }
  const std::optional<Scalar> s = scalar_from_python(other);
  if (!s) throw nb::next_overload();
  switch (which) {
    case 0: return ag::eq(a, s->value);
    case 1: return ag::ne(a, s->value);
    case 2: return ag::lt(a, s->value);
    case 3: return ag::le(a, s->value);
    case 4: return ag::gt(a, s->value);
    default: return ag::ge(a, s->value);
  }
}

// A Tensor or a number for ops that take either (where's branches, maximum's other): a number
// becomes a 0-d tensor of the dtype torch's promotion gives with `like`.
Tensor tensor_or_number(nb::handle h, const Tensor& like, const char* op) {
  Tensor t;
  if (nb::try_cast(h, t)) return t;
  const std::optional<Scalar> s = scalar_from_python(h);
  if (!s) throw nb::type_error((std::string(op) + "(): expected a Tensor or a number").c_str());
  return Tensor::scalar(s->value, result_type(like, *s));
}

Tensor where(const Tensor& cond, nb::handle input, nb::handle other) {
  Tensor a, b;
  const bool a_is = nb::try_cast(input, a), b_is = nb::try_cast(other, b);
  if (!a_is && !b_is) {
    const std::optional<Scalar> sa = scalar_from_python(input), sb = scalar_from_python(other);
    if (!sa || !sb) throw nb::type_error("where(): expected Tensors or numbers");
    const DType d = (sa->kind == ScalarKind::Float || sb->kind == ScalarKind::Float) ? default_dtype() : DType::Int64;
    a = Tensor::scalar(sa->value, d);
    b = Tensor::scalar(sb->value, d);
  } else {
    if (!a_is) a = tensor_or_number(input, b, "where");
    if (!b_is) b = tensor_or_number(other, a, "where");
  }
  const DType d = result_type(a, b);
  if (!ag::is_floating(d)) {
    ag::NoGradGuard no_grad;
    Tensor r = ag::where(cond, a.to(DType::Float64), b.to(DType::Float64));
    return d == DType::Bool ? ag::ne(r, 0.0) : float64_to_int64_exact(r, "where");
  }
  return ag::where(cond, as_dtype(a, d), as_dtype(b, d));
}

// masked_fill with a 0-d tensor as the value (torch's; the gradient of the value is the sum
// over the filled places).
Tensor masked_fill_tensor(const Tensor& a, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw std::runtime_error("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
                             std::to_string(value.dim()) + " dimension(s).");
  return where(mask, nb::cast(as_dtype(value, a.dtype())), nb::cast(a));  // the value where mask is true
}

Tensor max_all(const Tensor& a) {
  return reduce_integer(a, a.dtype(), "max", [](const Tensor& x) { return ag::amax(x); });
}
Tensor min_all(const Tensor& a) {
  return reduce_integer(a, a.dtype(), "min", [](const Tensor& x) { return ag::amin(x); });
}

nb::object max_min(const Tensor& a, nb::handle dim_or_other, bool keepdim, bool is_max) {
  if (dim_or_other.is_none()) return nb::cast(is_max ? max_all(a) : min_all(a));
  Tensor other;
  if (nb::try_cast(dim_or_other, other)) return nb::cast(binary(is_max ? BinaryOp::Maximum : BinaryOp::Minimum, a, other));
  const int64_t dim = int64_arg(dim_or_other, "dim");
  Tensor values = reduce_integer(a, a.dtype(), is_max ? "max" : "min", [&](const Tensor& x) {
    return is_max ? ag::max(x, dim, keepdim) : ag::min(x, dim, keepdim);
  });
  Tensor source = ag::is_floating(a.dtype()) ? a : a.to(DType::Float64);
  Tensor indices = is_max ? ag::argmax(source, dim, keepdim) : ag::argmin(source, dim, keepdim);
  return return_type(is_max ? "max" : "min")(values, indices);
}

Tensor arg_extreme(const Tensor& a, nb::handle dim, bool keepdim, bool is_max) {
  const Tensor x = ag::is_floating(a.dtype()) ? a : a.to(DType::Float64);
  if (dim.is_none()) {
    const Tensor flat = ag::reshape(x, {-1});
    Tensor r = is_max ? ag::argmax(flat, 0) : ag::argmin(flat, 0);
    if (keepdim) r = ag::reshape(r, Shape(static_cast<size_t>(a.dim()), 1));
    return r;
  }
  const int64_t d = int64_arg(dim, "dim");
  return is_max ? ag::argmax(x, d, keepdim) : ag::argmin(x, d, keepdim);
}

Tensor var(const Tensor& a, nb::handle dim, std::optional<bool> unbiased, bool keepdim, std::optional<double> correction) {
  if (unbiased && correction) throw std::runtime_error("var: pass either unbiased or correction, not both");
  const double c = correction ? *correction : (unbiased && !*unbiased ? 0.0 : 1.0);
  return ag::var(a, dims_from_python(dim), c, keepdim);
}

double norm_order(nb::handle p) {
  if (p.is_none()) return 2.0;
  if (nb::isinstance<nb::str>(p)) {
    if (nb::cast<std::string>(p) == "fro") return 2.0;
    throw std::runtime_error("norm: p='" + nb::cast<std::string>(p) + "' is not supported (attograd has the 2-norm, p=2 or 'fro')");
  }
  return nb::cast<double>(p);
}

// cat's and stack's inputs in the dtype torch's promotion gives them all.
std::vector<Tensor> promoted(const std::vector<Tensor>& ts) {
  bool one_dtype = true;
  for (const Tensor& t : ts) one_dtype &= t.dtype() == ts[0].dtype();
  if (one_dtype) return ts;
  DType d = ts[0].dtype();
  for (const Tensor& t : ts) d = result_type(Tensor::empty({1}, d), Tensor::empty({1}, t.dtype()));
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(as_dtype(t, d));
  return out;
}

nb::tuple as_tuple(const std::vector<Tensor>& ts) {
  nb::list out;
  for (const Tensor& t : ts) out.append(nb::cast(t));
  return nb::tuple(out);
}

std::vector<Tensor> split_sections(const Tensor& a, nb::handle size_or_sections, int64_t dim) {
  if (PyLong_Check(size_or_sections.ptr())) return ag::split(a, int64_arg(size_or_sections, "split_size"), dim);
  const int64_t d = ag::wrap_dim(dim, a.dim(), "split", a);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t n : shape_from_python(size_or_sections, "split_size_or_sections")) {
    out.push_back(ag::narrow(a, d, start, n));
    start += n;
  }
  if (start != a.size(d))
    throw std::runtime_error("split_with_sizes expects split_sizes to sum exactly to " + std::to_string(a.size(d)) +
                             " (input tensor's size at dimension " + std::to_string(dim) + "), but got split_sizes " +
                             nb::cast<std::string>(nb::str(size_or_sections)));
  return out;
}

// all()/any() of a tensor's values as a 0-d bool tensor.
Tensor all_any(const Tensor& a, bool all) {
  bool r = all;
  for (double v : a.to_double_vector()) {
    if (all && v == 0.0) r = false;
    if (!all && v != 0.0) r = true;
  }
  return Tensor::scalar(r ? 1.0 : 0.0, DType::Float64).to(DType::Bool);
}

// Python's binary operators: NotImplemented for what they do not take, so that Python tries the
// other operand (and then raises its TypeError).
nb::object op_or_not_implemented(BinaryOp op, const Tensor& a, nb::handle b, bool reflected) {
  if (std::optional<Tensor> r = try_binary(op, a, b, reflected)) return nb::cast(*r);
  return nb::borrow(Py_NotImplemented);
}

// `x += y`: in place, recorded as torch's (autograd/inplace.h); NotImplemented for an operand
// that is neither a Tensor nor a number, so that Python raises its TypeError.
nb::object inplace_operator(BinaryOp op, nb::handle self, nb::handle other, const char* name) {
  Tensor b;
  if (!nb::try_cast(other, b) && !scalar_from_python(other)) return nb::borrow(Py_NotImplemented);
  binary_inplace(op, nb::cast<Tensor>(self), other, name);
  return nb::borrow(self);
}

}  // namespace

void bind_tensor_ops(nb::module_& m, nb::class_<TensorImpl>& cls) {
  make_return_types(m);
  // ---- element-wise ---------------------------------------------------------------------------------
  def_both(m, cls, "exp", [](const Tensor& a) { return ag::exp(floating(a)); });
  def_both(m, cls, "log", [](const Tensor& a) { return ag::log(floating(a)); });
  def_both(m, cls, "sqrt", [](const Tensor& a) { return ag::sqrt(floating(a)); });
  def_both(m, cls, "rsqrt", [](const Tensor& a) { return ag::rdiv(1.0, ag::sqrt(floating(a))); });
  def_both(m, cls, "reciprocal", [](const Tensor& a) { return ag::rdiv(1.0, floating(a)); });
  def_both(m, cls, "tanh", [](const Tensor& a) { return ag::tanh(floating(a)); });
  def_both(m, cls, "sigmoid", [](const Tensor& a) { return ag::sigmoid(floating(a)); });
  def_both(m, cls, "sin", [](const Tensor& a) { return ag::sin(floating(a)); });
  def_both(m, cls, "cos", [](const Tensor& a) { return ag::cos(floating(a)); });
  def_both(m, cls, "relu", [](const Tensor& a) { return keep_integer(a, "relu", [](const Tensor& x) { return ag::relu(x); }); });
  def_both(m, cls, "abs", [](const Tensor& a) { return keep_integer(a, "abs", [](const Tensor& x) { return ag::abs(x); }); });
  def_both(m, cls, "neg", [](const Tensor& a) { return keep_integer(a, "neg", [](const Tensor& x) { return ag::neg(x); }); });
  def_both(m, cls, "negative", [](const Tensor& a) { return keep_integer(a, "neg", [](const Tensor& x) { return ag::neg(x); }); });
  def_both(m, cls, "square", [](const Tensor& a) { return binary(BinaryOp::Mul, a, a); });
  def_both(m, cls, "isnan", [](const Tensor& a) { return ag::ne(a, a); });
  def_both(m, cls, "isinf", [](const Tensor& a) {
    ag::NoGradGuard no_grad;
    return ag::eq(ag::abs(floating(a)), std::numeric_limits<double>::infinity());
  });
  def_both(m, cls, "isfinite", [](const Tensor& a) {
    ag::NoGradGuard no_grad;
    const Tensor x = floating(a);
    return ag::eq(ag::sub(x, x), 0.0);  // x − x is 0 for finite x, NaN for ±inf and NaN
  });
  def_both(m, cls, "add", [](const Tensor& a, nb::handle other, double alpha) {
    return binary(BinaryOp::Add, nb::cast(a), times_alpha(other, alpha));
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1.0);
  def_both(m, cls, "sub", [](const Tensor& a, nb::handle other, double alpha) {
    return binary(BinaryOp::Sub, nb::cast(a), times_alpha(other, alpha));
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1.0);
  def_both(m, cls, "mul", [](const Tensor& a, nb::handle other) { return binary(BinaryOp::Mul, nb::cast(a), other); },
           nb::arg("other"));
  def_both(m, cls, "div", [](const Tensor& a, nb::handle other) { return binary(BinaryOp::Div, nb::cast(a), other); },
           nb::arg("other"));
  def_both(m, cls, "true_divide", [](const Tensor& a, nb::handle other) { return binary(BinaryOp::Div, nb::cast(a), other); },
           nb::arg("other"));
  def_both(m, cls, "pow", [](const Tensor& a, nb::handle exponent) { return binary(BinaryOp::Pow, nb::cast(a), exponent); },
           nb::arg("exponent"));
  m.def("pow", [](nb::handle self, const Tensor& exponent) { return binary(BinaryOp::Pow, self, nb::cast(exponent)); },
        nb::arg("self"), nb::arg("exponent"));  // torch.pow(2, x)
  def_both(m, cls, "maximum", [](const Tensor& a, const Tensor& other) { return binary(BinaryOp::Maximum, a, other); },
           nb::arg("other"));
  def_both(m, cls, "minimum", [](const Tensor& a, const Tensor& other) { return binary(BinaryOp::Minimum, a, other); },
           nb::arg("other"));
  for (const char* name : {"clamp", "clip"})
    def_both(m, cls, name, [](const Tensor& a, std::optional<double> min, std::optional<double> max) {
      if (!min && !max) throw std::runtime_error("torch.clamp: At least one of 'min' or 'max' must not be None");
      return ag::clamp(a, min, max);
    }, nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  const char* cmp_names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (int i = 0; i < 6; ++i)
    def_both(m, cls, cmp_names[i], [i](const Tensor& a, nb::handle other) { return compare(a, other, i); }, nb::arg("other"));
  m.def("where", [](const Tensor& condition, nb::handle input, nb::handle other) { return where(condition, input, other); },
        nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  cls.def("where", [](const Tensor& self, const Tensor& condition, nb::handle other) {
    return where(condition, nb::cast(self), other);
  }, nb::arg("condition"), nb::arg("other"));
  def_both(m, cls, "masked_fill", [](const Tensor& a, const Tensor& mask, nb::handle value) {
    Tensor v;
    if (nb::try_cast(value, v)) return masked_fill_tensor(a, mask, v);
    return ag::masked_fill(a, mask, scalar_value(value, "masked_fill"));
  }, nb::arg("mask"), nb::arg("value"));
  def_both(m, cls, "logical_not", [](const Tensor& a) {
    ag::NoGradGuard no_grad;
    return ag::eq(to_bool_tensor(a, "logical_not").to(DType::Float64), 0.0);
  });
  def_both(m, cls, "logical_and", [](const Tensor& a, const Tensor& b) { return logical(a, b, '&'); }, nb::arg("other"));
  def_both(m, cls, "logical_or", [](const Tensor& a, const Tensor& b) { return logical(a, b, '|'); }, nb::arg("other"));
  def_both(m, cls, "logical_xor", [](const Tensor& a, const Tensor& b) { return logical(a, b, '^'); }, nb::arg("other"));
  def_both(m, cls, "tril", [](const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, true); }, nb::arg("diagonal") = 0);
  def_both(m, cls, "triu", [](const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, false); }, nb::arg("diagonal") = 0);

  // ---- reductions ----------------------------------------------------------------------------------------
  def_both(m, cls, "sum", [](const Tensor& a, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
    const Tensor x = dtype ? as_dtype(a, *dtype) : a;
    const std::vector<int64_t> dims = dims_from_python(dim);
    return reduce_integer(x, DType::Int64, "sum", [&](const Tensor& v) {
      return dim.is_none() && !keepdim ? ag::sum(v) : ag::sum(v, dims, keepdim);
    });
  }, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype").none() = nb::none());
  def_both(m, cls, "mean", [](const Tensor& a, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
    const Tensor x = dtype ? as_dtype(a, *dtype) : a;
    if (!ag::is_floating(x.dtype()))
      throw std::runtime_error(std::string("mean(): could not infer output dtype. Input dtype must be either a floating "
                                           "point or complex dtype. Got: ") + ag::dtype_name(x.dtype()));
    return dim.is_none() && !keepdim ? ag::mean(x) : ag::mean(x, dims_from_python(dim), keepdim);
  }, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype").none() = nb::none());
  def_both(m, cls, "max", [](const Tensor& a, nb::handle dim, bool keepdim) { return max_min(a, dim, keepdim, true); },
           nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "min", [](const Tensor& a, nb::handle dim, bool keepdim) { return max_min(a, dim, keepdim, false); },
           nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "amax", [](const Tensor& a, nb::handle dim, bool keepdim) {
    return reduce_integer(a, a.dtype(), "amax", [&](const Tensor& x) { return ag::amax(x, dims_from_python(dim), keepdim); });
  }, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "amin", [](const Tensor& a, nb::handle dim, bool keepdim) {
    return reduce_integer(a, a.dtype(), "amin", [&](const Tensor& x) { return ag::amin(x, dims_from_python(dim), keepdim); });
  }, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "argmax", [](const Tensor& a, nb::handle dim, bool keepdim) { return arg_extreme(a, dim, keepdim, true); },
           nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "argmin", [](const Tensor& a, nb::handle dim, bool keepdim) { return arg_extreme(a, dim, keepdim, false); },
           nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "norm", [](const Tensor& a, nb::handle p, nb::handle dim, bool keepdim) {
    return ag::norm(a, norm_order(p), dims_from_python(dim), keepdim);
  }, nb::arg("p") = "fro", nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "var", &var, nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(), nb::arg("keepdim") = false,
           nb::kw_only(), nb::arg("correction").none() = nb::none());
  def_both(m, cls, "std", [](const Tensor& a, nb::handle dim, std::optional<bool> unbiased, bool keepdim,
                             std::optional<double> correction) { return ag::sqrt(var(a, dim, unbiased, keepdim, correction)); },
           nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("correction").none() = nb::none());
  def_both(m, cls, "logsumexp", [](const Tensor& a, nb::handle dim, bool keepdim) {
    return ag::logsumexp(a, dims_from_python(dim), keepdim);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "all", [](const Tensor& a) { return all_any(a, true); });
  def_both(m, cls, "any", [](const Tensor& a) { return all_any(a, false); });
  def_both(m, cls, "softmax", [](const Tensor& a, int64_t dim) { return ag::softmax(floating(a), dim); }, nb::arg("dim"));
  def_both(m, cls, "log_softmax", [](const Tensor& a, int64_t dim) { return ag::log_softmax(floating(a), dim); },
           nb::arg("dim"));

  // ---- matrix products -------------------------------------------------------------------------------------
  for (const char* name : {"matmul", "mm", "bmm", "dot"})
    def_both(m, cls, name, [](const Tensor& a, const Tensor& other) { return matmul_gil_released(a, other); }, nb::arg("other"));

  // ---- shapes and views --------------------------------------------------------------------------------------
  cls.def("reshape", [](const Tensor& a, nb::args shape) { return ag::view_or_copy(a, varargs_shape(shape, "reshape")); });
  m.def("reshape", [](const Tensor& a, nb::handle shape) { return ag::view_or_copy(a, shape_from_python(shape, "reshape")); },
        nb::arg("input"), nb::arg("shape"));
  cls.def("view", [](const Tensor& a, nb::args shape) { return ag::view(a, varargs_shape(shape, "view")); });
  cls.def("permute", [](const Tensor& a, nb::args dims) { return ag::permute(a, varargs_shape(dims, "permute")); });
  m.def("permute", [](const Tensor& a, nb::handle dims) { return ag::permute(a, shape_from_python(dims, "permute")); },
        nb::arg("input"), nb::arg("dims"));
  cls.def("expand", [](const Tensor& a, nb::args sizes) { return expand_to(a, varargs_shape(sizes, "expand")); });
  cls.def("flip", [](const Tensor& a, nb::args dims) { return ag::flip(a, varargs_shape(dims, "flip")); });
  m.def("flip", [](const Tensor& a, nb::handle dims) { return ag::flip(a, shape_from_python(dims, "flip")); },
        nb::arg("input"), nb::arg("dims"));
  cls.def("expand_as", [](const Tensor& a, const Tensor& other) { return ag::expand(a, other.shape()); }, nb::arg("other"));
  cls.def("view_as", [](const Tensor& a, const Tensor& other) { return ag::view(a, other.shape()); }, nb::arg("other"));
  cls.def("reshape_as", [](const Tensor& a, const Tensor& other) { return ag::view_or_copy(a, other.shape()); }, nb::arg("other"));
  cls.def("type_as", [](const Tensor& a, const Tensor& other) { return as_dtype(a, other.dtype()); }, nb::arg("other"));
  for (const char* name : {"transpose", "swapaxes", "swapdims"})
    def_both(m, cls, name, [](const Tensor& a, int64_t dim0, int64_t dim1) { return ag::transpose(a, dim0, dim1); },
             nb::arg("dim0"), nb::arg("dim1"));
  def_both(m, cls, "t", [](const Tensor& a) { return a.t(); });
  cls.def_prop_ro("T", [](const Tensor& a) {
    Shape dims;
    for (int64_t d = a.dim() - 1; d >= 0; --d) dims.push_back(d);
    return a.dim() < 2 ? a : ag::permute(a, dims);
  });
  cls.def_prop_ro("mT", [](const Tensor& a) { return ag::transpose(a, -2, -1); });
  def_both(m, cls, "unsqueeze", [](const Tensor& a, int64_t dim) { return ag::unsqueeze(a, dim); }, nb::arg("dim"));
  def_both(m, cls, "squeeze", [](const Tensor& a, nb::handle dim) {
    if (dim.is_none()) return a.squeeze();
    Tensor r = a;
    std::vector<int64_t> dims = dims_from_python(dim);
    for (int64_t& d : dims) d = ag::wrap_dim(d, std::max<int64_t>(a.dim(), 1), "squeeze", a);
    std::sort(dims.rbegin(), dims.rend());  // the highest first, so the others keep their place
    for (int64_t d : dims) r = squeeze_dim(r, d);
    return r;
  }, nb::arg("dim").none() = nb::none());
  def_both(m, cls, "flatten", &flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);
  def_both(m, cls, "unflatten", [](const Tensor& a, int64_t dim, nb::handle sizes) {
    const int64_t d = ag::wrap_dim(dim, a.dim(), "unflatten", a);
    Shape shape(a.shape().begin(), a.shape().begin() + d);
    for (int64_t s : shape_from_python(sizes, "sizes")) shape.push_back(s);
    shape.insert(shape.end(), a.shape().begin() + d + 1, a.shape().end());
    Shape inner = shape_from_python(sizes, "sizes");
    int64_t known = 1, unknown = -1;
    for (size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == -1) unknown = static_cast<int64_t>(i);
      else if (__builtin_mul_overflow(known, inner[i], &known))
        throw std::runtime_error("unflatten: sizes " + ag::shape_str(inner) + " multiply beyond int64");
    }
    if (unknown >= 0) shape[static_cast<size_t>(d + unknown)] = a.size(d) / std::max<int64_t>(known, 1);
    return ag::view_or_copy(a, shape);
  }, nb::arg("dim"), nb::arg("sizes"));
  def_both(m, cls, "narrow", [](const Tensor& a, int64_t dim, int64_t start, int64_t length) {
    const int64_t d = ag::wrap_dim(dim, a.dim(), "narrow", a);
    return ag::narrow(a, d, start < 0 ? start + a.size(d) : start, length);
  }, nb::arg("dim"), nb::arg("start"), nb::arg("length"));
  def_both(m, cls, "chunk", [](const Tensor& a, int64_t chunks, int64_t dim) { return as_tuple(ag::chunk(a, chunks, dim)); },
           nb::arg("chunks"), nb::arg("dim") = 0);
  def_both(m, cls, "split", [](const Tensor& a, nb::handle size, int64_t dim) { return as_tuple(split_sections(a, size, dim)); },
           nb::arg("split_size_or_sections"), nb::arg("dim") = 0);
  def_both(m, cls, "unbind", [](const Tensor& a, int64_t dim) { return as_tuple(ag::unbind(a, dim)); }, nb::arg("dim") = 0);
  cls.def("__iter__", [](const Tensor& a) {
    if (a.dim() == 0) throw nb::type_error("iteration over a 0-d tensor");
    return nb::iter(as_tuple(ag::unbind(a, 0)));
  });
  for (const char* name : {"cat", "concat", "concatenate"})
    m.def(name, [](const std::vector<Tensor>& tensors, int64_t dim) {
      if (tensors.empty()) throw std::runtime_error("torch.cat(): expected a non-empty list of Tensors");
      return ag::concat(promoted(tensors), dim);
    }, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def("stack", [](const std::vector<Tensor>& tensors, int64_t dim) {
    if (tensors.empty()) throw std::runtime_error("stack expects a non-empty TensorList");
    return ag::stack(promoted(tensors), dim);
  }, nb::arg("tensors"), nb::arg("dim") = 0);
  def_both(m, cls, "index_select", [](const Tensor& a, int64_t dim, const Tensor& index) { return ag::index_select(a, dim, index); },
           nb::arg("dim"), nb::arg("index"));
  def_both(m, cls, "gather", [](const Tensor& a, int64_t dim, const Tensor& index) { return ag::gather(a, dim, index); },
           nb::arg("dim"), nb::arg("index"));
  def_both(m, cls, "scatter_add", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
    return ag::scatter_add(a, dim, index, src);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"));

  // ---- Python's operators ------------------------------------------------------------------------------------
  struct Operator {
    const char* name;
    const char* rname;
    const char* iname;
    BinaryOp op;
  };
  for (const Operator& o : {Operator{"__add__", "__radd__", "__iadd__", BinaryOp::Add},
                            Operator{"__sub__", "__rsub__", "__isub__", BinaryOp::Sub},
                            Operator{"__mul__", "__rmul__", "__imul__", BinaryOp::Mul},
                            Operator{"__truediv__", "__rtruediv__", "__itruediv__", BinaryOp::Div},
                            Operator{"__pow__", "__rpow__", "__ipow__", BinaryOp::Pow}}) {
    const BinaryOp op = o.op;
    cls.def(o.name, [op](const Tensor& a, nb::handle b) { return op_or_not_implemented(op, a, b, false); },
            nb::arg("other").none());
    cls.def(o.rname, [op](const Tensor& a, nb::handle b) { return op_or_not_implemented(op, a, b, true); },
            nb::arg("other").none());
    const char* iname = o.iname;
    cls.def(iname, [op, iname](nb::handle self, nb::handle b) { return inplace_operator(op, self, b, iname); });
  }
  struct InplaceMethod {
    const char* name;
    BinaryOp op;
  };
  for (const InplaceMethod& o : {InplaceMethod{"add_", BinaryOp::Add}, InplaceMethod{"sub_", BinaryOp::Sub}}) {
    const BinaryOp op = o.op;
    const char* name = o.name;
    cls.def(name, [op, name](nb::handle self, nb::handle other, double alpha) {
      binary_inplace(op, nb::cast<Tensor>(self), times_alpha(other, alpha), name);
      return nb::borrow(self);
    }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1.0);
  }
  for (const InplaceMethod& o : {InplaceMethod{"mul_", BinaryOp::Mul}, InplaceMethod{"div_", BinaryOp::Div},
                                 InplaceMethod{"pow_", BinaryOp::Pow}}) {
    const BinaryOp op = o.op;
    const char* name = o.name;
    cls.def(name, [op, name](nb::handle self, nb::handle other) {
      binary_inplace(op, nb::cast<Tensor>(self), other, name);
      return nb::borrow(self);
    }, nb::arg("other"));
  }
  for (const char* name : {"clamp_", "clip_"})
    cls.def(name, [](nb::handle self, std::optional<double> min, std::optional<double> max) {
      if (!min && !max) throw std::runtime_error("torch.clamp: At least one of 'min' or 'max' must not be None");
      ag::inplace_op(nb::cast<Tensor>(self), {}, true, [&](const Tensor& cur) { return ag::clamp(cur, min, max); });
      return nb::borrow(self);
    }, nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  cls.def("masked_fill_", [](nb::handle self, const Tensor& mask, nb::handle value) {
    const Tensor a = nb::cast<Tensor>(self);
    Tensor v;
    if (nb::try_cast(value, v)) {  // a 0-d tensor value, differentiable as torch's
      ag::inplace_op(a, {v}, false, [&](const Tensor& cur) { return masked_fill_tensor(cur, mask, v); });
      return nb::borrow(self);
    }
    const double number = scalar_value(value, "masked_fill_");
    ag::inplace_op(a, {}, false, [&](const Tensor& cur) { return ag::masked_fill(cur, mask, number); });
    return nb::borrow(self);
  }, nb::arg("mask"), nb::arg("value"));
  cls.def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul_gil_released(a, b); });
  cls.def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return matmul_gil_released(b, a); });
  cls.def("__neg__", [](const Tensor& a) { return keep_integer(a, "neg", [](const Tensor& x) { return ag::neg(x); }); });
  cls.def("__pos__", [](const Tensor& a) { return a; });
  cls.def("__abs__", [](const Tensor& a) { return keep_integer(a, "abs", [](const Tensor& x) { return ag::abs(x); }); });
  const char* cmp_dunders[] = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"};
  for (int i = 0; i < 6; ++i) {
    cls.def(cmp_dunders[i], [i](const Tensor& a, nb::handle other) { return compare(a, other, i); },
            nb::arg("other").none());
    cls.def(cmp_dunders[i], [](const Tensor&, nb::handle) { return nb::borrow(Py_NotImplemented); },
            nb::arg("other").none());
  }
  cls.def("__invert__", [](const Tensor& a) {
    ag::NoGradGuard no_grad;
    return ag::eq(to_bool_tensor(a, "~").to(DType::Float64), 0.0);
  });
  for (auto [name, rname, op] : {std::tuple{"__and__", "__rand__", '&'}, std::tuple{"__or__", "__ror__", '|'},
                                 std::tuple{"__xor__", "__rxor__", '^'}}) {
    const char c = op;
    cls.def(name, [c](const Tensor& a, nb::handle b) { return logical_with(a, b, c); });
    cls.def(rname, [c](const Tensor& a, nb::handle b) { return logical_with(a, b, c); });
  }
  // NumPy defers to these operators (np.float64(2) * t is a Tensor), as it does for torch's.
  cls.attr("__array_priority__") = 1000;
}

}  // namespace agpy
