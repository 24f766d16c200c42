// The rotary-embedding kernel shared by the rope op (autograd/ops/rope.cpp) and the KV-cache
// decoder (models/decode.cpp), so that both turn q and k by the very same angles.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace ag::kernels {

// cos and sin of position p's angles p·base^(−2i/D), i < D/2, for p in [0, positions): row p of
// (positions, D/2), each computed in double and rounded once to T.
template <class T>
void rope_tables(int64_t D, double base, int64_t positions, std::vector<T>& cos, std::vector<T>& sin) {
  const int64_t half = D / 2;
  cos.resize(static_cast<size_t>(positions * half));
  sin.resize(static_cast<size_t>(positions * half));
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    for (int64_t p = 0; p < positions; ++p) {
      const double angle = static_cast<double>(p) * inv_freq;
      cos[static_cast<size_t>(p * half + i)] = static_cast<T>(std::cos(angle));
      sin[static_cast<size_t>(p * half + i)] = static_cast<T>(std::sin(angle));
    }
  }
}

// One row x (D) at one position, its D/2 cos and sin: y[i] = x[i]·c − x[i+D/2]·s,
// y[i+D/2] = x[i+D/2]·c + x[i]·s, with s negated when `inverse`. y may be x.
template <class T>
inline void rope_row(const T* x, T* y, int64_t D, const T* c, const T* s, bool inverse) {
  const int64_t half = D / 2;
  const T sign = inverse ? T(-1) : T(1);
  for (int64_t i = 0; i < half; ++i) {
    const T x1 = x[i], x2 = x[i + half], si = sign * s[i];
    y[i] = x1 * c[i] - x2 * si;
    y[i + half] = x2 * c[i] + x1 * si;
  }
}

}  // namespace ag::kernels
