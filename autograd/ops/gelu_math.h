// GELU's formulas, shared by the gelu op (elementwise.cpp) and the fused MLP (fused_mlp.cpp).
// Exact: x·Φ(x), Φ(x) = ½·erfc(−x/√2). Approximate: ½x(1 + tanh(√(2/π)(x + 0.044715x³))).
// float32 uses the vectorisable erfc/exp of kernels/fast_math.h; float64 uses libm.
#pragma once
#include <cmath>

#include "autograd/kernels/fast_math.h"
#include "autograd/tensor.h"

namespace ag {
namespace detail {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/√(2π)
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluC = 0.044715;

inline float normal_cdf(float x) { return 0.5f * kernels::erfc_f32(-x * static_cast<float>(kInvSqrt2)); }
inline double normal_cdf(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }

template <class T> T gelu_fwd(T x, bool approx) {
  if (approx) return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(kGeluC) * x * x * x)));
  return x * normal_cdf(x);
}
// d/dx of gelu_fwd.
template <class T> T gelu_grad(T x, bool approx) {
  if (approx) {
    const T u = T(kSqrt2OverPi) * (x + T(kGeluC) * x * x * x);
    const T t = std::tanh(u);
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluC) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
  }
  const T pdf = T(kInvSqrt2Pi) * kernels::exp_fast_nonpositive(T(-0.5) * x * x);  // φ(x)
  return normal_cdf(x) + x * pdf;                                     // Φ(x) + x·φ(x)
}

}  // namespace detail
}  // namespace ag
