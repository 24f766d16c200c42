// abs, sigmoid, silu. Each backward is written with the ops of ops.h, so with create_graph
// (GradMode on inside backward) it is recorded and can be differentiated again. The input is
// kept as it is (not detached) for that reason: a backward that needs σ(a) recomputes it from
// a, because a node may not hold its own output (that would be a reference cycle).
#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"

namespace ag {

using kernels::map_float;

Tensor abs(const Tensor& a) {
  Tensor out = map_float(a, "abs", [](auto x) { return std::abs(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "abs", {a}, [a](const Tensor& g) {
      // out = |a|  =>  da = g · sign(a), with sign(0) = 0 as PyTorch (a subgradient)
      const Tensor sign = map_float(a.detach(), "abs_backward", [](auto x) {
        using T = decltype(x);
        return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;  // NaN stays NaN
      });
      return Grads{mul(g, sign)};
    });
  }
  return out;
}

namespace {
// σ(x) = 1/(1 + e^−x) for x >= 0 and e^x/(1 + e^x) for x < 0: e^(−|x|) never overflows.
template <class T> T sigmoid_of(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}
}  // namespace

Tensor sigmoid(const Tensor& a) {
  Tensor out = map_float(a, "sigmoid", [](auto x) { return sigmoid_of(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "sigmoid", {a}, [a, y = out.detach()](const Tensor& g) {
      // out = σ(a)  =>  da = g · σ(a)(1 − σ(a)). Without a graph to build, the saved output
      // serves; with one, σ(a) is recomputed by the op so that it depends on a.
      const Tensor s = GradMode::enabled() ? sigmoid(a) : y;
      return Grads{mul(g, mul(s, rsub(1.0, s)))};
    });
  }
  return out;
}

Tensor silu(const Tensor& a) {
  Tensor out = map_float(a, "silu", [](auto x) { return x * sigmoid_of(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "silu", {a}, [a](const Tensor& g) {
      // out = a·σ(a)  =>  da = g · (σ(a) + a·σ(a)(1 − σ(a))) = g · σ(a)(1 + a(1 − σ(a)))
      const Tensor s = sigmoid(a);
      return Grads{mul(g, mul(s, add(mul(a, rsub(1.0, s)), 1.0)))};
    });
  }
  return out;
}

}  // namespace ag
