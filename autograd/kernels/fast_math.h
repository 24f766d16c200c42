// Branch-free float32 exp and erfc that the compiler can vectorise (libm's expf/erff are
// function calls it cannot). The float64 paths keep std::exp/std::erf: gradient checks run in
// float64 and see the exact functions.
//
//   exp_f32   Cody-Waite range reduction, degree-7 polynomial: within 2 ulp of expf for
//             x in [-87.3, 88.7]; exactly 0 below (so a −inf mask gives exactly 0), +inf above,
//             NaN in -> NaN out. exp_f32_nonpositive: the same bits, cheaper, for x ≤ 88.
//   erfc_f32  erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2) (a Chebyshev fit with fractional
//             error below 1.2e-7 in exact arithmetic), reflected for z < 0. In float the
//             relative error stays below 1e-6 for |z| < 3 and 1e-5 beyond, where the rounding of
//             z² dominates; GELU's output moves by at most that fraction.
//   erfcx_of_t erfc(z)·exp(z²) from the same t, without an exp (the bf16 GELU's one-exp form).
// tests/autograd/test_fast_math.cpp holds both to libm over their ranges (llm.c style: a reference
// beside the fast kernel).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace ag::kernels {

namespace detail {
// exp_f32's range reduction and polynomial for x already clamped to [lo, hi]: returns e^r and
// sets n, where e^x = e^r·2^n. Shared by both exps below, so that they give the same bits.
inline float exp_f32_parts(float xc, int32_t& n) {
  // n = round(x / ln 2), via the 1.5·2^23 trick (exact for |n| < 2^22)
  const float shifter = 12582912.0f;
  const float nf = (xc * 1.44269504088896341f + shifter) - shifter;
  // r = x − n·ln2 in two parts, so r is exact to float precision; |r| ≤ ln2/2
  const float r = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;
  // e^r, Taylor to degree 7 (error < 5e-9 relative on |r| ≤ 0.347)
  float p = 1.98412698e-4f;
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  n = static_cast<int32_t>(nf);
  return p;
}
}  // namespace detail

inline float exp_f32(float x) {
  const float lo = -87.33654f, hi = 88.72283f;
  const float xc = x > lo ? (x < hi ? x : hi) : lo;  // NaN -> lo, so the int conversion below is defined
  int32_t n;
  const float p = detail::exp_f32_parts(xc, n);
  // · 2^n through the exponent bits (n ∈ [−126, 128]: split in two to stay representable)
  const int32_t n1 = n / 2, n2 = n - n1;
  const float s1 = std::bit_cast<float>((n1 + 127) << 23), s2 = std::bit_cast<float>((n2 + 127) << 23);
  const float y = p * s1 * s2;
  return x < lo ? 0.0f : (x > hi ? INFINITY : (x != x ? x : y));
}

// exp_f32 for the arguments that are never positive: softmax's s − max, GELU's −x²/2, erfc's
// −z² + P(t). For every x ≤ 88 it gives exp_f32's bits (the same e^r; p·2^n rounds once either
// way) in fewer operations: n ≤ 127 there, so 2^n is one float factor instead of two, and
// nothing above needs a case of its own. Not for x > 88 (it gives e^88).
inline float exp_f32_nonpositive(float x) {
  const float lo = -87.33654f, top = 88.0f;
  const float xc = x > lo ? (x < top ? x : top) : lo;  // NaN -> lo, as in exp_f32
  int32_t n;
  const float p = detail::exp_f32_parts(xc, n);
  const float y = p * std::bit_cast<float>((n + 127) << 23);
  return x < lo ? 0.0f : (x != x ? x : y);
}

inline float erfc_f32(float x) {
  const float z = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float r = t * exp_f32_nonpositive(-z * z + p);  // −z² + P(t) ≤ 3e-8 for every z ≥ 0
  return x >= 0.0f ? r : 2.0f - r;
}

// erfcx(z) = erfc(z)·exp(z²) for z >= 0, as a degree-9 polynomial in t = 1/(1 + z/2) (fitted
// to libm's erfc by least squares reweighted towards minimax: relative error 6.4e-8 in exact
// arithmetic for z in [0, 10]). erfc(z) = erfcx_of_t(t)·exp(−z²) then needs one exp, which a
// caller that also wants exp(−z²) for something else (GELU's φ) shares: see vec.cpp.
inline float erfcx_of_t(float t) {
  float p = -0.055051744f;
  p = p * t + 0.2639054f;
  p = p * t - 0.4414827f;
  p = p * t + 0.22119716f;
  p = p * t + 0.017072976f;
  p = p * t + 0.18125214f;
  p = p * t + 0.24979281f;
  p = p * t + 0.28109854f;
  p = p * t + 0.28222138f;
  p = p * t - 6.0107304e-06f;
  return p;
}

// exp of an argument that is never positive (every exp the templated kernels take: softmax's
// s − max, GELU's −x²/2), for either float type: the fast kernel for float (x ≤ 88: see
// exp_f32_nonpositive), libm for double.
inline float exp_fast_nonpositive(float x) { return exp_f32_nonpositive(x); }
inline double exp_fast_nonpositive(double x) { return std::exp(x); }

}  // namespace ag::kernels
