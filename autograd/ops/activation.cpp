// abs, sigmoid, silu. Each backward is written with the ops of ops.h from SavedTensor values,
// so with create_graph (GradMode on inside backward) it is recorded and can be differentiated
// again, to any order.
#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

using kernels::map_float;

Tensor abs(const Tensor& a) {
  AG_PROFILE_OP("abs");
  Tensor out = map_float(a, "abs", [](auto x) { return std::abs(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "abs", {a}, [sa = SavedTensor::save(a)](const Tensor& g) {
      // out = |a|  =>  da = g · sign(a), with sign(0) = 0 as PyTorch (a subgradient); sign is
      // piecewise constant, so it is computed from the values alone
      const Tensor sign = map_float(sa.unpack().detach(), "abs_backward", [](auto x) {
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
template <class T>
T sigmoid_of(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}
}  // namespace

Tensor sigmoid(const Tensor& a) {
  AG_PROFILE_OP("sigmoid");
  Tensor out = map_float(a, "sigmoid", [](auto x) { return sigmoid_of(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "sigmoid", {a}, [sy = SavedTensor::save_output(out)](const Tensor& g) {
      // out = σ(a)  =>  da = g · out(1 − out)  (under create_graph the unpacked output is
      // attached to this node, so the second derivative flows through σ again)
      const Tensor s = sy.unpack();
      return Grads{mul(g, mul(s, rsub(1.0, s)))};
    });
  }
  return out;
}

Tensor silu(const Tensor& a) {
  AG_PROFILE_OP("silu");
  Tensor out = map_float(a, "silu", [](auto x) { return x * sigmoid_of(x); });  // same shape as a
  if (should_record({&a})) {
    record(out, "silu", {a}, [sa = SavedTensor::save(a)](const Tensor& g) {
      // out = a·σ(a)  =>  da = g · (σ(a) + a·σ(a)(1 − σ(a))) = g · σ(a)(1 + a(1 − σ(a)))
      const Tensor a = sa.unpack(), s = sigmoid(a);
      return Grads{mul(g, mul(s, add(mul(a, rsub(1.0, s)), 1.0)))};
    });
  }
  return out;
}

}  // namespace ag
