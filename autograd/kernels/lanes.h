// Reductions over a row in kLanes independent partial sums (or maxima), combined in a fixed
// order: the compiler can vectorise them without reassociating, and the result is the same
// bits on every run. Shared by the element-wise kernels (vec.cpp) and the blockwise attention
// (flash.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

namespace ag::kernels::lanes {

constexpr int kLanes = 16;  // independent partial sums and maxima: vectorisable, fixed order

// max x[i] over n ≥ 1
template <class T>
inline T lane_max(const T* x, int64_t n) {
  T acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    // Not unrolled by hand or by -O3's early full unroll, which turns acc into 16 scalars that
    // GCC 12 then maxes one by one (vmaxss): kept as a loop, it is one vmaxps of 16 lanes.
#pragma GCC unroll 1
    for (int k = 0; k < kLanes; ++k) acc[k] = x[j + k] > acc[k] ? x[j + k] : acc[k];
  for (; j < n; ++j) acc[0] = x[j] > acc[0] ? x[j] : acc[0];
  T m = acc[0];
  for (int k = 1; k < kLanes; ++k) m = acc[k] > m ? acc[k] : m;
  return m;
}

// Σ x[i] over n
template <class T>
inline T lane_sum(const T* x, int64_t n) {
  T acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += x[j + k];
  for (; j < n; ++j) acc[0] += x[j];
  T s = 0;
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

}  // namespace ag::kernels::lanes
