// One softmax row, forward and backward; shared by softmax() and the attention kernels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "autograd/kernels/fast_math.h"
#include "autograd/kernels/vec.h"

namespace ag::kernels {

// y = softmax(x) over n entries. A row whose entries are all −inf (every key masked) gets
// y = 0 instead of 0/0 = NaN: nothing is attended, and the gradient through it is 0.
template <class T>
void softmax_row(const T* x, T* y, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
  if (m == -std::numeric_limits<T>::infinity()) {
    std::fill(y, y + n, T(0));
    return;
  }
  for (int64_t j = 0; j < n; ++j) y[j] = exp_fast_nonpositive(x[j] - m);  // vectorises; −inf gives exactly 0
  T s = 0;
  for (int64_t j = 0; j < n; ++j) s += y[j];
  const T inv = T(1) / s;
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

// Given y = softmax(x) and g = dL/dy: dx = y ⊙ (g − Σ_j g_j y_j).
template <class T>
void softmax_row_backward(const T* y, const T* g, T* dx, int64_t n) {
  T dot = 0;
  for (int64_t j = 0; j < n; ++j) dot += g[j] * y[j];
  for (int64_t j = 0; j < n; ++j) dx[j] = y[j] * (g[j] - dot);
}

// float32 rows go to the run-time dispatched kernels of vec.h (same formulas).
inline void softmax_row(const float* x, float* y, int64_t n) { vec::softmax_row(x, y, n); }
inline void softmax_row_backward(const float* y, const float* g, float* dx, int64_t n) {
  vec::softmax_row_backward(y, g, dx, n);
}

}  // namespace ag::kernels
