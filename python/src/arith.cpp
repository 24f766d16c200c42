// Type promotion and the arithmetic operators (arith.h).
#include "arith.h"

#include <cmath>

#include "autograd/errors.h"
#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/ops.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Tensor;

int category(DType d) { return d == DType::Bool ? 0 : d == DType::Int64 ? 1 : 2; }
int category(ScalarKind k) { return k == ScalarKind::Bool ? 0 : k == ScalarKind::Int ? 1 : 2; }
DType wider(DType a, DType b) {
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  return (a == DType::Float64 || b == DType::Float64) ? DType::Float64 : a;
}
DType dtype_of_category(int c) { return c == 0 ? DType::Bool : c == 1 ? DType::Int64 : default_dtype(); }

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
  }
  return "?";
}

// attograd's float op on two tensors of one float dtype.
Tensor float_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryOp::Add: return ag::add(a, b);
    case BinaryOp::Sub: return ag::sub(a, b);
    case BinaryOp::Mul: return ag::mul(a, b);
    case BinaryOp::Div: return ag::div(a, b);
    case BinaryOp::Maximum: return ag::maximum(a, b);
    case BinaryOp::Minimum: return ag::minimum(a, b);
    case BinaryOp::Pow: return ag::pow(a, b);
  }
  throw std::logic_error("float_op: unknown op");
}

// The result dtype an op gives for operands promoted to `common` (true division of integers
// gives the default float dtype, as torch's).
DType op_result(BinaryOp op, DType common) {
  if (op == BinaryOp::Div && !ag::is_floating(common)) return default_dtype();
  return common;
}

void check_bool_op(BinaryOp op, DType d) {
  if (d == DType::Bool && op == BinaryOp::Sub)
    throw std::runtime_error(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator "
        "instead.");
}

Tensor integer_result(const Tensor& r, DType d, const char* op) {
  if (d == DType::Bool) return ag::ne(r, 0.0);
  return float64_to_int64_exact(r, op);
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  const bool a_dims = a.dim() > 0, b_dims = b.dim() > 0;
  if (a_dims == b_dims) return wider(a.dtype(), b.dtype());
  const DType dims = a_dims ? a.dtype() : b.dtype(), zero_d = a_dims ? b.dtype() : a.dtype();
  return category(zero_d) > category(dims) ? zero_d : dims;
}

DType result_type(const Tensor& a, const Scalar& s) {
  if (category(s.kind) > category(a.dtype())) return dtype_of_category(category(s.kind));
  return a.dtype();
}

Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

Tensor float64_to_int64_exact(const Tensor& t, const char* op) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  for (double v : t.to_double_vector())
    if (!(std::fabs(v) <= kExact))
      throw std::runtime_error(std::string(op) +
                               ": an int64 result beyond ±2^53 (attograd computes integer arithmetic in float64, "
                               "exact up to 2^53)");
  return t.to(DType::Int64);
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const DType common = result_type(a, b);
  const DType out = op_result(op, common);
  if (ag::is_floating(out)) return float_op(op, as_dtype(a, out), as_dtype(b, out));
  check_bool_op(op, common);
  ag::NoGradGuard no_grad;  // integer tensors never require grad
  // (An integer tensor to negative integer powers truncates toward 0, as torch's: 2^-1 is 0.)
  return integer_result(float_op(op, as_dtype(a, DType::Float64), as_dtype(b, DType::Float64)), out, op_name(op));
}

Tensor binary(BinaryOp op, const Tensor& a, const Scalar& s, bool reflected) {
  const DType common = result_type(a, s);
  const DType out = op_result(op, common);
  if (ag::is_floating(out)) {
    const Tensor x = as_dtype(a, out);
    const double v = s.value;
    switch (op) {
      case BinaryOp::Add: return ag::add(x, v);
      case BinaryOp::Sub: return reflected ? ag::rsub(v, x) : ag::sub(x, Tensor::scalar(v, out));  // SubBackward0
      case BinaryOp::Mul: return ag::mul(x, v);
      case BinaryOp::Div:
        // Division by the number itself (as torch), not multiplication by its reciprocal.
        return reflected ? ag::rdiv(v, x) : ag::div(x, Tensor::scalar(v, out));
      case BinaryOp::Pow:
        return reflected ? ag::pow(Tensor::scalar(v, out), x) : ag::pow(x, v);  // v ** x, or x ** v
      case BinaryOp::Maximum:
      case BinaryOp::Minimum: return float_op(op, x, Tensor::scalar(v, out));
    }
  }
  check_bool_op(op, common);
  ag::NoGradGuard no_grad;
  const Tensor x = as_dtype(a, DType::Float64), c = Tensor::scalar(s.value, DType::Float64);
  if (op == BinaryOp::Pow && !reflected) {
    if (s.value < 0) throw std::runtime_error("Integers to negative integer powers are not allowed.");
    return integer_result(ag::pow(x, s.value), out, "pow");
  }
  return integer_result(reflected ? float_op(op, c, x) : float_op(op, x, c), out, op_name(op));
}

std::optional<Tensor> try_binary(BinaryOp op, const Tensor& a, nb::handle b, bool reflected) {
  Tensor tb;
  if (nb::try_cast(b, tb)) return reflected ? binary(op, tb, a) : binary(op, a, tb);
  if (const std::optional<Scalar> s = scalar_from_python(b)) return binary(op, a, *s, reflected);
  return std::nullopt;
}

Tensor binary(BinaryOp op, nb::handle a, nb::handle b) {
  Tensor t;
  std::optional<Tensor> r;
  if (nb::try_cast(a, t)) r = try_binary(op, t, b, false);
  else if (nb::try_cast(b, t)) r = try_binary(op, t, a, true);
  if (r) return *r;
  throw nb::type_error((std::string(op_name(op)) + "(): expected Tensors or numbers, got " +
                        nb::cast<std::string>(nb::str(a.type().attr("__name__"))) + " and " +
                        nb::cast<std::string>(nb::str(b.type().attr("__name__"))))
                           .c_str());
}

nb::object times_alpha(nb::handle other, double alpha) {
  if (alpha == 1.0) return nb::borrow(other);
  if (const std::optional<Scalar> s = scalar_from_python(other)) {
    const double v = s->value * alpha;
    if (s->kind != ScalarKind::Float && alpha == std::floor(alpha) && std::fabs(v) < 9.2e18)
      return nb::int_(static_cast<int64_t>(v));
    return nb::float_(v);
  }
  Tensor t;
  if (!nb::try_cast(other, t)) throw nb::type_error("add/sub: other must be a Tensor or a number");
  const Scalar a{alpha, alpha == std::floor(alpha) ? ScalarKind::Int : ScalarKind::Float};
  return nb::cast(binary(BinaryOp::Mul, t, a));
}

void binary_inplace(BinaryOp op, const Tensor& self, nb::handle other, const char* name) {
  Tensor t;
  const bool is_tensor = nb::try_cast(other, t);
  if (!is_tensor && !scalar_from_python(other))
    throw nb::type_error((std::string(name) + "(): expected a Tensor or a number, got " +
                          nb::cast<std::string>(nb::str(other.type().attr("__name__"))))
                             .c_str());
  // mul, div, pow, maximum and minimum keep their first input for the backward.
  const bool saves_self = op != BinaryOp::Add && op != BinaryOp::Sub;
  ag::inplace_op(self, is_tensor ? std::vector<Tensor>{t} : std::vector<Tensor>{}, saves_self,
                 [&](const Tensor& current) { return *try_binary(op, current, other); });
}

}  // namespace agpy
