// Element-wise loops shared by the ops: a unary map and a broadcasting binary zip.
// They compute values only; the ops around them record the graph.
#pragma once
#include <string>

#include "autograd/dims.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/parallel.h"
#include "autograd/tensor.h"

namespace ag::kernels {

// Element-wise loops shorter than this stay on one thread.
constexpr int64_t kParallelGrain = 32768;

// t itself when contiguous, else a contiguous copy of its values (never recorded).
inline Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : t.detach().contiguous(); }

inline void check_float(const Tensor& a, const char* op) {
  if (!a.defined()) throw std::invalid_argument(std::string(op) + ": undefined input tensor");
  if (!is_floating(a.dtype()))
    throw std::invalid_argument(std::string(op) + ": expected a float32 or float64 tensor, got " + describe(a));
}

inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  check_float(a, op);
  check_float(b, op);
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(op) + ": dtype mismatch, " + describe(a) + " and " + describe(b) +
                                " (convert one with .to())");
}

// y[i] = f(x[i]) over a float tensor; f is a generic lambda.
template <class F>
Tensor map_float(const Tensor& a, const char* op, F f) {
  check_float(a, op);
  const Tensor x = dense(a);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* py = out.data<scalar_t>();
    parallel::parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
    });
  });
  return out;
}

// z[i] = f(x[i], y[i]) over two same-shaped float tensors (no broadcasting); for backward
// kernels such as gelu's, which combine an input with the incoming gradient.
template <class F>
Tensor map2_float(const Tensor& a, const Tensor& b, const char* op, F f) {
  check_same_dtype(a, b, op);
  if (a.shape() != b.shape())
    throw std::invalid_argument(std::string(op) + ": shapes differ, " + describe(a) + " and " + describe(b));
  const Tensor x = dense(a), y = dense(b);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    const scalar_t* px = x.data<scalar_t>();
    const scalar_t* py = y.data<scalar_t>();
    scalar_t* pz = out.data<scalar_t>();
    parallel::parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) pz[i] = f(px[i], py[i]);
    });
  });
  return out;
}

// Strides that read `t` as if broadcast to `out_shape` (0 along broadcast dims).
inline Shape broadcast_strides(const Tensor& t, const Shape& out_shape) {
  const size_t nd = out_shape.size(), td = t.shape().size();
  Shape st(nd, 0);
  for (size_t i = 0; i < td; ++i) {
    const size_t o = nd - td + i;
    st[o] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  return st;
}

// z = f(x, y) with NumPy broadcasting. Fast paths for equal shapes and for a scalar operand;
// otherwise for_each_row walks the output with no division per element.
template <class F>
Tensor zip_float(const Tensor& a, const Tensor& b, const char* op, F f) {
  check_same_dtype(a, b, op);
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(out_shape, a.dtype());
  const int64_t n = out.numel();
  if (n == 0) return out;
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    scalar_t* pz = out.data<scalar_t>();
    if (a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous()) {
      const scalar_t* px = a.data<scalar_t>();
      const scalar_t* py = b.data<scalar_t>();
      parallel::parallel_for(n, kParallelGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) pz[i] = f(px[i], py[i]);
      });
      return;
    }
    if (b.numel() == 1 && a.shape() == out_shape && a.is_contiguous()) {
      const scalar_t* px = a.data<scalar_t>();
      const scalar_t y = *b.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) pz[i] = f(px[i], y);
      return;
    }
    if (a.numel() == 1 && b.shape() == out_shape && b.is_contiguous()) {
      const scalar_t x = *a.data<scalar_t>();
      const scalar_t* py = b.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) pz[i] = f(x, py[i]);
      return;
    }
    const Shape sa = broadcast_strides(a, out_shape), sb = broadcast_strides(b, out_shape);
    const scalar_t* base_a = static_cast<const scalar_t*>(a.impl().storage->data);
    const scalar_t* base_b = static_cast<const scalar_t*>(b.impl().storage->data);
    const int64_t inner = out_shape.back(), ia = sa.back(), ib = sb.back();
    for_each_row<2>(out_shape, {sa.data(), sb.data()}, {a.impl().offset, b.impl().offset},
                    [&](int64_t r, const std::array<int64_t, 2>& o) {
                      scalar_t* row = pz + r * inner;
                      for (int64_t j = 0; j < inner; ++j) row[j] = f(base_a[o[0] + j * ia], base_b[o[1] + j * ib]);
                    });
  });
  return out;
}

}  // namespace ag::kernels
