#include "autograd/kernels/vec.h"

#include <cmath>
#include <limits>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/fast_math.h"
#include "autograd/kernels/lanes.h"
#include "autograd/kernels/multiversion.h"

namespace ag::kernels::vec {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
using lanes::lane_sum;

// Calls f(i) for i in [0, n), 64 at a time in one unrolled body. GELU's erfc and exp are long
// chains of dependent operations; four vectors' chains side by side give the core independent
// work to overlap (GELU forward and backward at (768, 512): 426–471 µs before, 308–327 after on
// a Zen 5; bench/README). The compiler may fuse a multiply and an add differently in the
// unrolled body than in a plain loop: gelu_forward and gelu_forward_and_grad kept their bits;
// gelu_backward changed by rounding (tests/autograd/test_fused_mlp.cpp holds it to the fused kernel's).
template <int kBlock = 64, class F>
inline __attribute__((always_inline)) void interleaved(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
#pragma GCC unroll 64
    for (int64_t j = 0; j < kBlock; ++j) f(i + j);
  }
  for (; i < n; ++i) f(i);
}

// Returns gelu(x) and writes gelu'(x) = Φ(x) + x·φ(x) over x: one evaluation of Φ for both.
inline __attribute__((always_inline)) float gelu_and_grad(float& x_then_grad) {
  const float x = x_then_grad;
  const float cdf = 0.5f * erfc_f32(-x * kInvSqrt2);
  const float pdf = kInvSqrt2Pi * exp_f32_nonpositive(-0.5f * x * x);
  x_then_grad = cdf + x * pdf;
  return x * cdf;
}

// The same two values with one exp where gelu_and_grad takes two (erfc's and φ's), for the bf16
// autocast path: e = exp(−x²/2) serves φ(x) = e/√(2π) and, through the erfcx fit,
// erfc(|x|/√2) = erfcx_of_t(t)·e. 1.01 against gelu_and_grad's 1.58 ns a value at (128, 1536),
// 1.16 against 1.77 at (2048, 1536), on a Zen 4 (bench/kernels_bench.cpp, bench/README). Against libm in double over [−14, 14]: gelu' within 2e-7 and x·Φ(x) within
// 4e-6 relative, as the float32 kernel (the rounding of x² in the exponent dominates in both);
// y is then rounded to bf16 (a relative step of 2^-8), so the two kernels' y differ only where
// a value sits that close to a rounding boundary (0.3% of a million values). float32 training
// keeps gelu_and_grad: its bits are what `make train` ends on.
inline __attribute__((always_inline)) float gelu_and_grad_one_exp(float& x_then_grad) {
  const float x = x_then_grad;
  const float e = exp_f32_nonpositive(-0.5f * x * x);              // exp(−x²/2) = exp(−z²)
  const float t = 1.0f / (1.0f + 0.5f * (std::fabs(x) * kInvSqrt2));  // z = |x|/√2
  const float tail = 0.5f * erfcx_of_t(t) * e;                     // Φ(−|x|) = erfc(z)/2
  const float cdf = x >= 0.0f ? 1.0f - tail : tail;                // Φ(x)
  x_then_grad = cdf + x * (kInvSqrt2Pi * e);
  return x * cdf;
}
}  // namespace

AG_MULTIVERSION void gelu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
  interleaved(n, [&](int64_t i) { y[i] = x[i] * (0.5f * erfc_f32(-x[i] * kInvSqrt2)); });
}

AG_MULTIVERSION void gelu_backward(const float* __restrict x, const float* __restrict g, float* __restrict dx, int64_t n) {
  interleaved(n, [&](int64_t i) {
    float grad = x[i];
    gelu_and_grad(grad);  // gelu'(x) (gelu(x), returned, is not wanted here)
    dx[i] = g[i] * grad;
  });
}

AG_MULTIVERSION void gelu_forward_and_grad(float* __restrict x_then_grad, float* __restrict y, int64_t n) {
  interleaved(n, [&](int64_t i) { y[i] = gelu_and_grad(x_then_grad[i]); });
}

AG_MULTIVERSION void gelu_forward_and_grad_bf16(float* __restrict x_then_grad, uint16_t* __restrict y_bits, int64_t n) {
  interleaved(n, [&](int64_t i) { y_bits[i] = bf16_bits(gelu_and_grad_one_exp(x_then_grad[i])); });
}

AG_MULTIVERSION void gelu_forward_and_grad_bf16(float* __restrict x_then_grad, float* __restrict y_rounded, int64_t n) {
  interleaved(n, [&](int64_t i) { y_rounded[i] = round_to_bf16(gelu_and_grad_one_exp(x_then_grad[i])); });
}

AG_MULTIVERSION void softmax_row(const float* x, float* y, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  if (m == -std::numeric_limits<float>::infinity()) {  // every key masked: attend to nothing
    for (int64_t j = 0; j < n; ++j) y[j] = 0.0f;
    return;
  }
  for (int64_t j = 0; j < n; ++j) y[j] = exp_f32_nonpositive(x[j] - m);
  const float inv = 1.0f / lane_sum(y, n);
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

AG_MULTIVERSION void softmax_row_backward(const float* __restrict y, const float* __restrict g, float* __restrict dx,
                                          int64_t n) {
  for (int64_t j = 0; j < n; ++j) dx[j] = g[j] * y[j];
  const float dot = lane_sum(dx, n);
  for (int64_t j = 0; j < n; ++j) dx[j] = y[j] * (g[j] - dot);
}

AG_MULTIVERSION void layer_norm_forward(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                                        float* __restrict y, float* __restrict mean, float* __restrict rstd,
                                        int64_t rows, int64_t C, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    const float m = lane_sum(xr, C) / static_cast<float>(C);
    for (int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * (xr[j] - m);  // scratch: squared deviations
    const float var = lane_sum(yr, C) / static_cast<float>(C);          // biased, as PyTorch
    const float rs = 1.0f / std::sqrt(var + eps);
    mean[r] = m;
    rstd[r] = rs;
    if (w && b)
      for (int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * w[j] + b[j];
    else
      for (int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
  }
}

AG_MULTIVERSION void layer_norm_backward(const float* __restrict x, const float* __restrict w,
                                         const float* __restrict mean, const float* __restrict rstd,
                                         const float* __restrict g, float* __restrict dx, float* __restrict dw,
                                         float* __restrict db, int64_t rows, int64_t C) {
  using lanes::kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const float* gr = g + r * C;
    const float m = mean[r], rs = rstd[r];
    const auto xhat = [&](int64_t j) { return (xr[j] - m) * rs; };            // x̂ = (x − μ)·rstd
    const auto dxhat = [&](int64_t j) { return gr[j] * (w ? w[j] : 1.0f); };  // dx̂ = g·w
    // One pass over the row: dw += g·x̂, db += g, and the two row sums Σ dx̂ and Σ dx̂·x̂ in
    // kLanes partial sums (lane k takes j ≡ k, the tail lane 0), combined in order as lane_sum.
    float s1[kLanes] = {}, s2[kLanes] = {};
    const auto visit = [&](int64_t j, int k) {
      const float xh = xhat(j), dxh = dxhat(j);
      s1[k] += dxh;
      s2[k] += dxh * xh;
      if (dw) dw[j] += gr[j] * xh;
      if (db) db[j] += gr[j];
    };
    int64_t j = 0;
    for (; j + kLanes <= C; j += kLanes)
      for (int k = 0; k < kLanes; ++k) visit(j + k, k);
    for (; j < C; ++j) visit(j, 0);
    if (!dx) continue;
    float sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int k = 0; k < kLanes; ++k) {
      sum_dxhat += s1[k];
      sum_dxhat_xhat += s2[k];
    }
    const float mean_dxhat = sum_dxhat / static_cast<float>(C), mean_dxhat_xhat = sum_dxhat_xhat / static_cast<float>(C);
    // Second pass, x and g still in L1: dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))
    float* dr = dx + r * C;
    for (j = 0; j < C; ++j) dr[j] = rs * (dxhat(j) - mean_dxhat - xhat(j) * mean_dxhat_xhat);
  }
}

AG_MULTIVERSION void rms_norm_forward(const float* __restrict x, const float* __restrict w, float* __restrict y,
                                      float* __restrict rstd, int64_t rows, int64_t C, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    for (int64_t j = 0; j < C; ++j) yr[j] = xr[j] * xr[j];  // scratch: squares
    const float rs = 1.0f / std::sqrt(lane_sum(yr, C) / static_cast<float>(C) + eps);
    rstd[r] = rs;
    if (w)
      for (int64_t j = 0; j < C; ++j) yr[j] = xr[j] * rs * w[j];
    else
      for (int64_t j = 0; j < C; ++j) yr[j] = xr[j] * rs;
  }
}

AG_MULTIVERSION void rms_norm_backward(const float* __restrict x, const float* __restrict w, const float* __restrict rstd,
                                       const float* __restrict g, float* __restrict dx, float* __restrict dw, int64_t rows,
                                       int64_t C) {
  using lanes::kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const float* gr = g + r * C;
    const float rs = rstd[r];
    const auto xhat = [&](int64_t j) { return xr[j] * rs; };                  // x̂ = x·rstd
    const auto dxhat = [&](int64_t j) { return gr[j] * (w ? w[j] : 1.0f); };  // dx̂ = g·w
    // One pass: dw += g·x̂ and Σ dx̂·x̂ in kLanes partial sums, combined in order as lane_sum.
    float s[kLanes] = {};
    const auto visit = [&](int64_t j, int k) {
      const float xh = xhat(j);
      s[k] += dxhat(j) * xh;
      if (dw) dw[j] += gr[j] * xh;
    };
    int64_t j = 0;
    for (; j + kLanes <= C; j += kLanes)
      for (int k = 0; k < kLanes; ++k) visit(j + k, k);
    for (; j < C; ++j) visit(j, 0);
    if (!dx) continue;
    float dot = 0;
    for (int k = 0; k < kLanes; ++k) dot += s[k];
    const float mean_dxhat_xhat = dot / static_cast<float>(C);
    // dx = rstd·(dx̂ − x̂·mean(dx̂·x̂))
    float* dr = dx + r * C;
    for (j = 0; j < C; ++j) dr[j] = rs * (dxhat(j) - xhat(j) * mean_dxhat_xhat);
  }
}

AG_MULTIVERSION void adamw_step(float* __restrict w, float* __restrict m, float* __restrict v, const float* __restrict g,
                                int64_t n, float beta1, float beta2, float decay, float step_size, float bc2_sqrt,
                                float eps) {
  for (int64_t k = 0; k < n; ++k) {
    w[k] *= decay;                                                   // decoupled weight decay
    m[k] = beta1 * m[k] + (1.0f - beta1) * g[k];                     // first moment
    v[k] = beta2 * v[k] + (1.0f - beta2) * g[k] * g[k];              // second moment
    w[k] -= step_size * m[k] / (std::sqrt(v[k]) / bc2_sqrt + eps);   // bias-corrected step
  }
}

AG_MULTIVERSION double sum_squares(const float* x, int64_t n) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(x[i + k]) * x[i + k];
  for (; i < n; ++i) acc[0] += static_cast<double>(x[i]) * x[i];
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

}  // namespace ag::kernels::vec
