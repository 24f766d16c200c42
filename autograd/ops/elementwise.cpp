// Element-wise ops. Each forward is followed by its backward, which restates what it
// differentiates. A backward returns the gradient of a broadcast input in the broadcast
// shape; the engine sums it back to the input's shape (engine.cpp, reduce_to_input). Every
// backward is written with ops, so it is differentiable again as it stands (create_graph);
// where a fused kernel pays (tanh, relu, gelu: on training paths), the backward is an op of its
// own beside its forward (tanh_backward, threshold_backward, gelu_backward), whose forward is that
// kernel and whose own backward is written with ops.
#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/fast_math.h"
#include "autograd/kernels/vec.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/ops/gelu_math.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

using kernels::map2_float;
using kernels::map_float;
using kernels::zip_float;

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < g.dim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(i);
  Tensor s = sum(g, dims, /*keepdim=*/true);
  return reshape(s, shape);
}

// ---- binary ------------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("add");
  Tensor out = zip_float(a, b, "add", [](auto x, auto y) { return x + y; });
  if (should_record({&a, &b})) {
    record(out, "add", {a, b}, [](const Tensor& g) {
      // out = a + b  =>  da = g, db = g
      return Grads{g, g};
    });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("sub");
  Tensor out = zip_float(a, b, "sub", [](auto x, auto y) { return x - y; });
  if (should_record({&a, &b})) {
    record(out, "sub", {a, b}, [](const Tensor& g) {
      // out = a - b  =>  da = g, db = -g
      return Grads{g, neg(g)};
    });
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("mul");
  Tensor out = zip_float(a, b, "mul", [](auto x, auto y) { return x * y; });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // Each gradient needs the other operand: save only what is needed.
    record(out, "mul", {a, b}, [sa = gb ? SavedTensor::save(a) : SavedTensor(), sb = ga ? SavedTensor::save(b) : SavedTensor(),
                                ga, gb](const Tensor& g) {
      // out = a * b  =>  da = g * b, db = g * a
      return Grads{ga ? mul(g, sb.unpack()) : Tensor(), gb ? mul(g, sa.unpack()) : Tensor()};
    });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("div");
  Tensor out = zip_float(a, b, "div", [](auto x, auto y) { return x / y; });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, "div", {a, b}, [sa = gb ? SavedTensor::save(a) : SavedTensor(), sb = SavedTensor::save(b), ga,
                                gb](const Tensor& g) {
      // out = a / b  =>  da = g / b, db = -g * a / b²
      const Tensor a = sa.unpack(), b = sb.unpack();
      Tensor da, db;
      if (ga) da = div(g, b);
      if (gb) db = neg(div(mul(g, a), mul(b, b)));
      return Grads{da, db};
    });
  }
  return out;
}

// ---- unary and scalar forms ----------------------------------------------------------------------

Tensor neg(const Tensor& a) {
  AG_PROFILE_OP("neg");
  Tensor out = map_float(a, "neg", [](auto x) { return -x; });
  if (should_record({&a})) record(out, "neg", {a}, [](const Tensor& g) { return Grads{neg(g)}; });
  return out;
}

Tensor add(const Tensor& a, double s) {
  AG_PROFILE_OP("add_scalar");
  Tensor out = map_float(a, "add_scalar", [s](auto x) { return x + static_cast<decltype(x)>(s); });
  if (should_record({&a})) record(out, "add_scalar", {a}, [](const Tensor& g) { return Grads{g}; });
  return out;
}

Tensor mul(const Tensor& a, double s) {
  AG_PROFILE_OP("mul_scalar");
  Tensor out = map_float(a, "mul_scalar", [s](auto x) { return x * static_cast<decltype(x)>(s); });
  // out = a * s  =>  da = g * s
  if (should_record({&a})) record(out, "mul_scalar", {a}, [s](const Tensor& g) { return Grads{mul(g, s)}; });
  return out;
}

Tensor rsub(double s, const Tensor& a) {
  AG_PROFILE_OP("rsub_scalar");
  Tensor out = map_float(a, "rsub_scalar", [s](auto x) { return static_cast<decltype(x)>(s) - x; });
  if (should_record({&a})) record(out, "rsub_scalar", {a}, [](const Tensor& g) { return Grads{neg(g)}; });
  return out;
}

Tensor rdiv(double s, const Tensor& a) {
  AG_PROFILE_OP("rdiv_scalar");
  Tensor out = map_float(a, "rdiv_scalar", [s](auto x) { return static_cast<decltype(x)>(s) / x; });
  if (should_record({&a})) {
    record(out, "rdiv_scalar", {a}, [sa = SavedTensor::save(a), s](const Tensor& g) {
      // out = s / a  =>  da = -g * s / a²
      const Tensor a = sa.unpack();
      return Grads{mul(div(g, mul(a, a)), -s)};
    });
  }
  return out;
}

Tensor pow(const Tensor& a, double e) {
  AG_PROFILE_OP("pow");
  Tensor out = map_float(a, "pow", [e](auto x) { return static_cast<decltype(x)>(std::pow(x, e)); });
  if (should_record({&a})) {
    record(out, "pow", {a}, [sa = SavedTensor::save(a), e](const Tensor& g) {
      // out = a^e  =>  da = g * e * a^(e-1); for e = 0 the output is constant and da = 0, also
      // at a = 0, where the formula would give 0·0^(−1) = 0·inf = NaN (PyTorch gives 0)
      if (e == 0.0) return Grads{Tensor::zeros(g.shape(), g.dtype())};
      return Grads{mul(mul(g, pow(sa.unpack(), e - 1)), e)};
    });
  }
  return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("pow_tensor");
  Tensor out = zip_float(a, b, "pow", [](auto x, auto y) { return static_cast<decltype(x)>(std::pow(x, y)); });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, "pow_tensor", {a, b}, [sa = SavedTensor::save(a), sb = SavedTensor::save(b), ga, gb](const Tensor& g) {
      // out = a^b  =>  da = g·b·a^(b−1), 0 where b = 0 (the formula would give 0·0^(−1) at a = 0);
      //                db = g·a^b·log(a), 0 where a = 0 and b ≥ 0 (a^b is constant 0 or 1 there)
      // The masks are piecewise constant in the inputs: computed from the values alone. Inside
      // them the formulas read a harmless 1 (b − 1 → 0, log(a) → log 1), so that no NaN of the
      // branch not taken reaches a second-order gradient.
      const Tensor a = sa.unpack(), b = sb.unpack(), zero = Tensor::zeros({}, g.dtype()), one = Tensor::ones({}, g.dtype());
      Tensor da, db;
      if (ga) {
        const Tensor constant = eq(b.detach(), 0.0);
        da = where(constant, zero, mul(mul(g, b), pow(a, sub(where(constant, one, b), one))));
      }
      if (gb) {
        const Tensor flat = zip_float(a.detach(), b.detach(), "pow", [](auto x, auto y) {
          return x == 0 && y >= 0 ? decltype(x)(1) : decltype(x)(0);
        }).to(DType::Bool);
        db = where(flat, zero, mul(mul(g, pow(a, b)), log(where(flat, one, a))));
      }
      return Grads{da, db};
    });
  }
  return out;
}

Tensor exp(const Tensor& a) {
  AG_PROFILE_OP("exp");
  Tensor out = map_float(a, "exp", [](auto x) { return std::exp(x); });
  // out = exp(a)  =>  da = g * out   (the output is saved detached: no cycle)
  if (should_record({&a}))
    record(out, "exp", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) { return Grads{mul(g, sy.unpack())}; });
  return out;
}

Tensor log(const Tensor& a) {
  AG_PROFILE_OP("log");
  Tensor out = map_float(a, "log", [](auto x) { return std::log(x); });
  // out = log(a)  =>  da = g / a
  if (should_record({&a}))
    record(out, "log", {a}, [sa = SavedTensor::save(a)](const Tensor& g) { return Grads{div(g, sa.unpack())}; });
  return out;
}

Tensor sqrt(const Tensor& a) {
  AG_PROFILE_OP("sqrt");
  Tensor out = map_float(a, "sqrt", [](auto x) { return std::sqrt(x); });
  if (should_record({&a})) {
    record(out, "sqrt", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) {
      // out = √a  =>  da = g / (2 out)
      return Grads{div(g, mul(sy.unpack(), 2.0))};
    });
  }
  return out;
}

Tensor tanh(const Tensor& a) {
  AG_PROFILE_OP("tanh");
  Tensor out = map_float(a, "tanh", [](auto x) { return std::tanh(x); });
  if (should_record({&a})) {
    record(out, "tanh", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) {
      // out = tanh(a)  =>  da = g * (1 - out²)
      return Grads{tanh_backward(g, sy.unpack())};
    });
  }
  return out;
}

Tensor tanh_backward(const Tensor& grad, const Tensor& output) {
  AG_PROFILE_OP("tanh_backward");
  // da = g ⊙ (1 − y²) in one pass
  Tensor da = map2_float(grad, output, "tanh_backward", [](auto gv, auto yv) { return gv * (1 - yv * yv); });
  if (should_record({&grad, &output})) {
    record(da, "tanh_backward", {grad, output}, [sg = SavedTensor::save(grad), sy = SavedTensor::save(output)](const Tensor& u) {
      // da = g ⊙ (1 − y²)  =>  dg = u ⊙ (1 − y²),  dy = −2 · u ⊙ g ⊙ y
      const Tensor y = sy.unpack();
      return Grads{tanh_backward(u, y), mul(mul(mul(u, sg.unpack()), y), -2.0)};
    });
  }
  return da;
}

Tensor relu(const Tensor& a) {
  AG_PROFILE_OP("relu");
  Tensor out = map_float(a, "relu", [](auto x) { return x > 0 ? x : decltype(x)(0); });
  if (should_record({&a})) {
    record(out, "relu", {a}, [sa = SavedTensor::save(a)](const Tensor& g) {
      // out = max(a, 0)  =>  da = g where a > 0
      return Grads{threshold_backward(g, sa.unpack(), 0.0)};
    });
  }
  return out;
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, double threshold) {
  AG_PROFILE_OP("threshold_backward");
  Tensor da = map2_float(grad, self, "threshold_backward",
                         [threshold](auto gv, auto x) { return x > decltype(x)(threshold) ? gv : decltype(x)(0); });
  if (should_record({&grad, &self})) {
    record(da, "threshold_backward", {grad, self}, [sa = SavedTensor::save(self), threshold](const Tensor& u) {
      // da = g where a > threshold, else 0  =>  dg = u where a > threshold; no gradient for a
      // (the step is piecewise constant in a)
      return Grads{threshold_backward(u, sa.unpack(), threshold), Tensor()};
    });
  }
  return da;
}

// GELU: the scalar formulas (gelu_fwd, gelu_grad) are in gelu_math.h (the fused MLP uses them too).
namespace {
using detail::gelu_fwd;
using detail::gelu_grad;
using detail::kGeluC;
using detail::kInvSqrt2Pi;
using detail::kSqrt2OverPi;

// gelu''(x) with ops, for gelu_backward's own backward. Exact: gelu' = Φ + x·φ, so
// gelu'' = 2φ + x·φ' = φ(x)·(2 − x²). Tanh form: with u = √(2/π)(x + c·x³), t = tanh(u),
// gelu' = ½(1 + t) + ½·x·(1 − t²)·u', so gelu'' = (1 − t²)·(u' − x·t·u'² + ½·x·u'').
Tensor gelu_second_derivative(const Tensor& x, bool approx) {
  const Tensor x2 = mul(x, x);
  if (!approx) return mul(mul(exp(mul(x2, -0.5)), kInvSqrt2Pi), rsub(2.0, x2));  // φ(x)·(2 − x²)
  const Tensor t = tanh(mul(add(x, mul(mul(x2, x), kGeluC)), kSqrt2OverPi));
  const Tensor du = mul(add(mul(x2, 3 * kGeluC), 1.0), kSqrt2OverPi);  // u'
  const Tensor d2u = mul(x, 6 * kGeluC * kSqrt2OverPi);                 // u''
  return mul(rsub(1.0, mul(t, t)), add(sub(du, mul(mul(x, t), mul(du, du))), mul(mul(x, d2u), 0.5)));
}
}  // namespace

Tensor gelu(const Tensor& a, bool approximate) {
  AG_PROFILE_OP(approximate ? "gelu_tanh" : "gelu");
  kernels::check_float(a, "gelu");
  const bool fast = !approximate && a.dtype() == DType::Float32;  // the vectorised float32 kernel
  Tensor out;
  if (fast) {
    const Tensor x = kernels::dense(a);
    out = Tensor::empty(a.shape(), a.dtype());
    const float* px = x.data<float>();
    float* py = out.data<float>();
    parallel::parallel_for(a.numel(), kernels::kParallelGrain,
                           [&](int64_t b, int64_t e) { kernels::vec::gelu_forward(px + b, py + b, e - b); });
  } else {
    out = map_float(a, "gelu", [approximate](auto x) { return gelu_fwd(x, approximate); });
  }
  if (should_record({&a})) {
    record(out, approximate ? "gelu_tanh" : "gelu", {a}, [sa = SavedTensor::save(a), approximate](const Tensor& g) {
      // out = gelu(a)  =>  da = g * gelu'(a)
      return Grads{gelu_backward(g, sa.unpack(), approximate)};
    });
  }
  return out;
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool approximate) {
  AG_PROFILE_OP(approximate ? "gelu_tanh_backward" : "gelu_backward");
  kernels::check_same_dtype(grad, self, "gelu_backward");
  if (grad.shape() != self.shape())
    throw std::invalid_argument("gelu_backward: shapes differ, " + describe(grad) + " and " + describe(self));
  Tensor da;
  if (!approximate && self.dtype() == DType::Float32) {  // the vectorised float32 kernel
    const Tensor x = kernels::dense(self), G = kernels::dense(grad);
    da = Tensor::empty(self.shape(), self.dtype());
    const float *px = x.data<float>(), *pg = G.data<float>();
    float* pd = da.data<float>();
    parallel::parallel_for(self.numel(), kernels::kParallelGrain,
                           [&](int64_t b, int64_t e) { kernels::vec::gelu_backward(px + b, pg + b, pd + b, e - b); });
  } else {
    da = map2_float(grad, self, "gelu_backward",
                    [approximate](auto gv, auto x) { return gv * gelu_grad(x, approximate); });
  }
  if (should_record({&grad, &self})) {
    record(da, approximate ? "gelu_tanh_backward" : "gelu_backward", {grad, self},
           [sg = SavedTensor::save(grad), sa = SavedTensor::save(self), approximate](const Tensor& u) {
             // da = g ⊙ gelu'(a)  =>  dg = u ⊙ gelu'(a),  da = u ⊙ g ⊙ gelu''(a)
             const Tensor a = sa.unpack();
             return Grads{gelu_backward(u, a, approximate),
                          mul(mul(u, sg.unpack()), gelu_second_derivative(a, approximate))};
           });
  }
  return da;
}

}  // namespace ag
