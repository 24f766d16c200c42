// Comparisons: eq, ne, lt, le, gt, ge, tensor–tensor (broadcast) and tensor–scalar. Their
// results are bool tensors made from values only: nothing is recorded, so they never require
// grad (a mask is piecewise constant; its derivative is 0 where it exists).
#include <array>
#include <cmath>
#include <functional>
#include <type_traits>

#include "autograd/dims.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"

namespace ag {

namespace {

void check_defined(const Tensor& a, const char* op) {
  if (!a.defined()) throw std::invalid_argument(std::string(op) + ": undefined input tensor");
}

// out[i] = pred(a[i], b[i]) over a and b broadcast together. Different dtypes are compared as
// float64 (exact for every float32 and for int64 up to 2^53).
template <class P>
Tensor compare(const Tensor& a_in, const Tensor& b_in, const char* op, P pred) {
  check_defined(a_in, op);
  check_defined(b_in, op);
  const bool same = a_in.dtype() == b_in.dtype();
  const Tensor a = same ? a_in : a_in.detach().to(DType::Float64);
  const Tensor b = same ? b_in : b_in.detach().to(DType::Float64);
  const Shape s = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(s, DType::Bool);  // the broadcast shape
  if (out.numel() == 0) return out;
  const Shape s1 = s.empty() ? Shape{1} : s;  // a 0-d result is walked as one row of one
  auto bst = [&](const Tensor& t) { return s.empty() ? Shape{0} : kernels::broadcast_strides(t, s); };
  const Shape sa = bst(a), sb = bst(b);
  bool* po = out.data<bool>();
  AG_DISPATCH_ALL(a.dtype(), op, [&] {
    const scalar_t* pa = static_cast<const scalar_t*>(a.impl().storage->data);
    const scalar_t* pb = static_cast<const scalar_t*>(b.impl().storage->data);
    const int64_t inner = s1.back(), ia = sa.back(), ib = sb.back();
    for_each_row<2>(s1, {sa.data(), sb.data()}, {a.impl().offset, b.impl().offset},
                    [&](int64_t r, const std::array<int64_t, 2>& o) {
                      bool* row = po + r * inner;
                      for (int64_t j = 0; j < inner; ++j) row[j] = pred(pa[o[0] + j * ia], pb[o[1] + j * ib]);
                    });
  });
  return out;
}

// out[i] = pred(a[i], s). A float tensor compares in its own dtype, s cast to it (PyTorch's
// promotion: a Python scalar does not widen a tensor); an int64 or bool tensor compares
// exactly with a whole s, and as float64 otherwise.
template <class P>
Tensor compare(const Tensor& a, double s, const char* op, P pred) {
  check_defined(a, op);
  Tensor out = Tensor::empty(a.shape(), DType::Bool);
  const int64_t n = a.numel();
  if (n == 0) return out;
  bool* po = out.data<bool>();
  const Tensor x = a.is_contiguous() ? a : a.detach().contiguous();
  AG_DISPATCH_ALL(a.dtype(), op, [&] {
    const scalar_t* px = x.data<scalar_t>();
    if constexpr (std::is_floating_point_v<scalar_t>) {
      const scalar_t v = static_cast<scalar_t>(s);
      for (int64_t i = 0; i < n; ++i) po[i] = pred(px[i], v);
    } else if (std::isfinite(s) && std::floor(s) == s && std::fabs(s) < 9.2e18) {
      const int64_t v = static_cast<int64_t>(s);
      for (int64_t i = 0; i < n; ++i) po[i] = pred(static_cast<int64_t>(px[i]), v);
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = pred(static_cast<double>(px[i]), s);
    }
  });
  return out;
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", std::equal_to<>()); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(a, b, "ne", std::not_equal_to<>()); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(a, b, "lt", std::less<>()); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(a, b, "le", std::less_equal<>()); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(a, b, "gt", std::greater<>()); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(a, b, "ge", std::greater_equal<>()); }
Tensor eq(const Tensor& a, double s) { return compare(a, s, "eq", std::equal_to<>()); }
Tensor ne(const Tensor& a, double s) { return compare(a, s, "ne", std::not_equal_to<>()); }
Tensor lt(const Tensor& a, double s) { return compare(a, s, "lt", std::less<>()); }
Tensor le(const Tensor& a, double s) { return compare(a, s, "le", std::less_equal<>()); }
Tensor gt(const Tensor& a, double s) { return compare(a, s, "gt", std::greater<>()); }
Tensor ge(const Tensor& a, double s) { return compare(a, s, "ge", std::greater_equal<>()); }

}  // namespace ag

namespace ag {

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  const std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  return x == y;  // NaN != NaN, as torch.equal
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  const Shape s = broadcast_shapes(a.shape(), b.shape(), "allclose");
  // Both read through their broadcast strides, as float64.
  const std::vector<double> u = make_view(a, s, kernels::broadcast_strides(a, s), a.impl().offset).to_double_vector();
  const std::vector<double> v = make_view(b, s, kernels::broadcast_strides(b, s), b.impl().offset).to_double_vector();
  for (size_t i = 0; i < u.size(); ++i) {
    if (std::isnan(u[i]) || std::isnan(v[i])) {
      if (equal_nan && std::isnan(u[i]) && std::isnan(v[i])) continue;
      return false;
    }
    if (u[i] == v[i]) continue;  // infinities of one sign
    if (!(std::fabs(u[i] - v[i]) <= atol + rtol * std::fabs(v[i]))) return false;
  }
  return true;
}

}  // namespace ag
