// Element-wise ops. Each forward is followed by its backward, which restates what it
// differentiates. Broadcast inputs get their gradient summed back with sum_to(). A backward
// written with ops is differentiable again as it stands (create_graph); one with a fused
// kernel keeps it for the ordinary pass and uses ops when GradMode is on (engine.h).
#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/fast_math.h"
#include "autograd/kernels/vec.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/ops/gelu_math.h"
#include "autograd/parallel.h"

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
  Tensor out = zip_float(a, b, "add", [](auto x, auto y) { return x + y; });
  if (should_record({&a, &b})) {
    record(out, "add", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
      // out = a + b  =>  da = g, db = g
      return Grads{sum_to(g, sa), sum_to(g, sb)};
    });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = zip_float(a, b, "sub", [](auto x, auto y) { return x - y; });
  if (should_record({&a, &b})) {
    record(out, "sub", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
      // out = a - b  =>  da = g, db = -g
      return Grads{sum_to(g, sa), sum_to(neg(g), sb)};
    });
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = zip_float(a, b, "mul", [](auto x, auto y) { return x * y; });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // Each gradient needs the other operand: save only what is needed.
    record(out, "mul", {a, b}, [sa = gb ? SavedTensor::save(a) : SavedTensor(), sb = ga ? SavedTensor::save(b) : SavedTensor(),
                                sha = a.shape(), shb = b.shape(), ga, gb](const Tensor& g) {
      // out = a * b  =>  da = g * b, db = g * a
      return Grads{ga ? sum_to(mul(g, sb.unpack()), sha) : Tensor(), gb ? sum_to(mul(g, sa.unpack()), shb) : Tensor()};
    });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = zip_float(a, b, "div", [](auto x, auto y) { return x / y; });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, "div", {a, b}, [sa = gb ? SavedTensor::save(a) : SavedTensor(), sb = SavedTensor::save(b), ga, gb,
                                out_shape_a = a.shape()](const Tensor& g) {
      // out = a / b  =>  da = g / b, db = -g * a / b²
      const Tensor a = sa.unpack(), b = sb.unpack();
      Tensor da, db;
      if (ga) da = sum_to(div(g, b), out_shape_a);
      if (gb) db = sum_to(neg(div(mul(g, a), mul(b, b))), b.shape());
      return Grads{da, db};
    });
  }
  return out;
}

// ---- unary and scalar forms ----------------------------------------------------------------------

Tensor neg(const Tensor& a) {
  Tensor out = map_float(a, "neg", [](auto x) { return -x; });
  if (should_record({&a})) record(out, "neg", {a}, [](const Tensor& g) { return Grads{neg(g)}; });
  return out;
}

Tensor add(const Tensor& a, double s) {
  Tensor out = map_float(a, "add_scalar", [s](auto x) { return x + static_cast<decltype(x)>(s); });
  if (should_record({&a})) record(out, "add_scalar", {a}, [](const Tensor& g) { return Grads{g}; });
  return out;
}

Tensor mul(const Tensor& a, double s) {
  Tensor out = map_float(a, "mul_scalar", [s](auto x) { return x * static_cast<decltype(x)>(s); });
  // out = a * s  =>  da = g * s
  if (should_record({&a})) record(out, "mul_scalar", {a}, [s](const Tensor& g) { return Grads{mul(g, s)}; });
  return out;
}

Tensor rsub(double s, const Tensor& a) {
  Tensor out = map_float(a, "rsub_scalar", [s](auto x) { return static_cast<decltype(x)>(s) - x; });
  if (should_record({&a})) record(out, "rsub_scalar", {a}, [](const Tensor& g) { return Grads{neg(g)}; });
  return out;
}

Tensor rdiv(double s, const Tensor& a) {
  Tensor out = map_float(a, "rdiv_scalar", [s](auto x) { return static_cast<decltype(x)>(s) / x; });
  if (should_record({&a})) {
    record(out, "rdiv_scalar", {a}, [sa = SavedTensor::save(a), s](const Tensor& g) {
      // out = s / a  =>  da = -g * s / a²
      const Tensor a = sa.unpack();
      if (GradMode::enabled()) return Grads{mul(div(g, mul(a, a)), -s)};
      return Grads{map2_float(g, a, "rdiv_scalar_backward", [s](auto gv, auto x) {
        return -gv * static_cast<decltype(x)>(s) / (x * x);
      })};
    });
  }
  return out;
}

Tensor pow(const Tensor& a, double e) {
  Tensor out = map_float(a, "pow", [e](auto x) { return static_cast<decltype(x)>(std::pow(x, e)); });
  if (should_record({&a})) {
    record(out, "pow", {a}, [sa = SavedTensor::save(a), e](const Tensor& g) {
      // out = a^e  =>  da = g * e * a^(e-1); for e = 0 the output is constant and da = 0, also
      // at a = 0, where the formula would give 0·0^(−1) = 0·inf = NaN (PyTorch gives 0)
      if (e == 0.0) return Grads{Tensor::zeros(g.shape(), g.dtype())};
      const Tensor a = sa.unpack();
      if (GradMode::enabled()) return Grads{mul(mul(g, pow(a, e - 1)), e)};
      return Grads{map2_float(g, a, "pow_backward", [e](auto gv, auto x) {
        return gv * static_cast<decltype(x)>(e * std::pow(x, e - 1));
      })};
    });
  }
  return out;
}

Tensor exp(const Tensor& a) {
  Tensor out = map_float(a, "exp", [](auto x) { return std::exp(x); });
  // out = exp(a)  =>  da = g * out   (the output is saved detached: no cycle)
  if (should_record({&a}))
    record(out, "exp", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) { return Grads{mul(g, sy.unpack())}; });
  return out;
}

Tensor log(const Tensor& a) {
  Tensor out = map_float(a, "log", [](auto x) { return std::log(x); });
  // out = log(a)  =>  da = g / a
  if (should_record({&a}))
    record(out, "log", {a}, [sa = SavedTensor::save(a)](const Tensor& g) { return Grads{div(g, sa.unpack())}; });
  return out;
}

Tensor sqrt(const Tensor& a) {
  Tensor out = map_float(a, "sqrt", [](auto x) { return std::sqrt(x); });
  if (should_record({&a})) {
    record(out, "sqrt", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) {
      // out = √a  =>  da = g / (2 out)
      const Tensor y = sy.unpack();
      if (GradMode::enabled()) return Grads{div(g, mul(y, 2.0))};
      return Grads{map2_float(g, y, "sqrt_backward", [](auto gv, auto yv) { return gv / (yv + yv); })};
    });
  }
  return out;
}

Tensor tanh(const Tensor& a) {
  Tensor out = map_float(a, "tanh", [](auto x) { return std::tanh(x); });
  if (should_record({&a})) {
    record(out, "tanh", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) {
      // out = tanh(a)  =>  da = g * (1 - out²)
      const Tensor y = sy.unpack();
      if (GradMode::enabled()) return Grads{mul(g, rsub(1.0, mul(y, y)))};
      return Grads{map2_float(g, y, "tanh_backward", [](auto gv, auto yv) { return gv * (1 - yv * yv); })};
    });
  }
  return out;
}

Tensor relu(const Tensor& a) {
  Tensor out = map_float(a, "relu", [](auto x) { return x > 0 ? x : decltype(x)(0); });
  if (should_record({&a})) {
    record(out, "relu", {a}, [sa = SavedTensor::save(a)](const Tensor& g) {
      // out = max(a, 0)  =>  da = g where a > 0
      const Tensor a = sa.unpack();
      if (GradMode::enabled())  // the step (a > 0) is a constant: its own derivative is 0
        return Grads{mul(g, map_float(a.detach(), "relu_step", [](auto x) { return x > 0 ? decltype(x)(1) : decltype(x)(0); }))};
      return Grads{map2_float(g, a, "relu_backward", [](auto gv, auto x) { return x > 0 ? gv : decltype(x)(0); })};
    });
  }
  return out;
}

// GELU: the scalar formulas and gelu'(x) as ops are in gelu_math.h (the fused MLP uses them too).
namespace {
using detail::gelu_fwd;
using detail::gelu_grad;
using detail::kGeluC;
using detail::kInvSqrt2Pi;
using detail::kSqrt2OverPi;
using detail::normal_cdf;

// φ(x) = exp(−x²/2)/√(2π), with ops.
Tensor normal_pdf_op(const Tensor& x) { return mul(exp(mul(mul(x, x), -0.5)), kInvSqrt2Pi); }

// Φ(x) as an op of its own (there is no erf op): exact GELU's derivative needs it when the
// backward pass is recorded.
Tensor normal_cdf_op(const Tensor& x) {
  Tensor out = map_float(x, "normal_cdf", [](auto v) { return normal_cdf(v); });
  if (should_record({&x}))
    // out = Φ(x)  =>  dx = g · φ(x)
    record(out, "normal_cdf", {x}, [sx = SavedTensor::save(x)](const Tensor& g) { return Grads{mul(g, normal_pdf_op(sx.unpack()))}; });
  return out;
}
}  // namespace

Tensor detail::gelu_derivative_op(const Tensor& x, bool approx) {
  if (approx) {
    // u = √(2/π)(x + c·x³), t = tanh(u):  gelu' = ½(1 + t) + ½·x·(1 − t²)·√(2/π)(1 + 3c·x²)
    const Tensor x2 = mul(x, x);
    const Tensor t = tanh(mul(add(x, mul(mul(x2, x), kGeluC)), kSqrt2OverPi));
    const Tensor du = mul(add(mul(x2, 3 * kGeluC), 1.0), kSqrt2OverPi);
    return add(mul(add(t, 1.0), 0.5), mul(mul(mul(x, rsub(1.0, mul(t, t))), du), 0.5));
  }
  return add(normal_cdf_op(x), mul(x, normal_pdf_op(x)));  // Φ(x) + x·φ(x)
}
using detail::gelu_derivative_op;

Tensor gelu(const Tensor& a, bool approximate) {
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
    record(out, approximate ? "gelu_tanh" : "gelu", {a}, [sa = SavedTensor::save(a), approximate, fast](const Tensor& g) {
      // out = gelu(a)  =>  da = g * gelu'(a)
      const Tensor a = sa.unpack();
      if (GradMode::enabled()) return Grads{mul(g, gelu_derivative_op(a, approximate))};
      if (fast) {
        const Tensor x = kernels::dense(a), G = kernels::dense(g);
        Tensor dx = Tensor::empty(a.shape(), a.dtype());
        const float *px = x.data<float>(), *pg = G.data<float>();
        float* pd = dx.data<float>();
        parallel::parallel_for(a.numel(), kernels::kParallelGrain, [&](int64_t b, int64_t e) {
          kernels::vec::gelu_backward(px + b, pg + b, pd + b, e - b);
        });
        return Grads{dx};
      }
      return Grads{map2_float(g, a, "gelu_backward", [approximate](auto gv, auto x) {
        return gv * gelu_grad(x, approximate);
      })};
    });
  }
  return out;
}

}  // namespace ag
