// topk: the k most extreme elements along a dim and where they were, as torch.topk. The values
// are picked, not computed, so the gradient goes back to the picked positions (a scatter, whose
// own backward is a gather: differentiable to any order).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

template <class T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Ranks the (value, position) pairs of one line as torch's CPU kernel does, so that ties (and
// sorted = false) come out in torch's order: a partial sort when k is small next to n (k·64 ≤ n),
// else a selection of the k-th element followed by a sort of those before it; values alone are
// compared, NaN above every number in both directions.
template <class T> void rank_line(std::vector<std::pair<T, int64_t>>& line, int64_t k, bool largest, bool sorted) {
  const auto above = [](const std::pair<T, int64_t>& x, const std::pair<T, int64_t>& y) {
    return (is_nan(x.first) && !is_nan(y.first)) || x.first > y.first;
  };
  const auto below = [](const std::pair<T, int64_t>& x, const std::pair<T, int64_t>& y) {
    return (!is_nan(x.first) && is_nan(y.first)) || x.first < y.first;
  };
  const auto n = static_cast<int64_t>(line.size());
  auto rank = [&](auto before) {
    if (k * 64 <= n) {
      std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
      return;
    }
    std::nth_element(line.begin(), line.begin() + k - 1, line.end(), before);
    if (sorted) std::sort(line.begin(), line.begin() + k - 1, before);
  };
  if (largest) rank(above);
  else rank(below);
}

}  // namespace

std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  AG_PROFILE_OP("topk");
  if (a.dim() == 0) {
    // torch: a 0-d tensor is its own top element, for k of 0 or 1.
    wrap_dim(dim, 1, "topk", a);
    if (k < 0 || k > 1) throw std::invalid_argument("selected index k out of range");  // torch's message
    auto [v, i] = topk(reshape(a, {1}), 1, 0, largest, true);
    return {reshape(v, {}), reshape(i, {})};
  }
  const int64_t d = wrap_dim(dim, a.dim(), "topk", a);
  const int64_t n = a.size(d);
  if (k < 0 || k > n) throw std::invalid_argument("selected index k out of range");  // torch's message
  Shape out_shape = a.shape();
  out_shape[d] = k;
  Tensor values = Tensor::empty(out_shape, a.dtype());    // a's shape, k along d
  Tensor indices = Tensor::empty(out_shape, DType::Int64);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= a.size(i);
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.size(i);
  // Each line along d of a, read through its strides, ranked as torch's kernel ranks it.
  const Shape& st = a.strides();
  if (k > 0) {
    AG_DISPATCH_ALL(a.dtype(), "topk", [&] {
      const scalar_t* pa = static_cast<const scalar_t*>(a.impl().storage->data);
      scalar_t* pv = values.data<scalar_t>();
      int64_t* pi = indices.data<int64_t>();
      std::vector<std::pair<scalar_t, int64_t>> line(static_cast<size_t>(n));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          // The offset of line (o, in): o and in unravelled over the dims before and after d.
          int64_t off = a.impl().offset, rest = o;
          for (int64_t i = d - 1; i >= 0; --i) {
            off += (rest % a.size(i)) * st[i];
            rest /= a.size(i);
          }
          rest = in;
          for (int64_t i = a.dim() - 1; i > d; --i) {
            off += (rest % a.size(i)) * st[i];
            rest /= a.size(i);
          }
          for (int64_t j = 0; j < n; ++j) line[j] = {pa[off + j * st[d]], j};
          rank_line(line, k, largest, sorted);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = (o * k + j) * inner + in;
            pv[at] = line[j].first;
            pi[at] = line[j].second;
          }
        }
    });
  }
  if (should_record({&a})) {
    record(values, "topk", {a}, [si = SavedTensor::save(indices), a_shape = a.shape(), d](const Tensor& g) {
      // values = a at indices along d  =>  da = zeros with g placed at those positions (each
      // position is picked at most once per line, so adding is placing)
      return Grads{scatter_add(Tensor::zeros(a_shape, g.dtype()), d, si.unpack(), g)};
    });
  }
  return {values, indices};
}

}  // namespace ag
