// Reductions: sum and mean over any dims; max and min along one dim (the gradient goes to the
// selected element); argmax and argmin (indices, no gradient); amax and amin over any dims
// (ties share the gradient); the 2-norm over any dims.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

// Which dims are reduced, as a mask; an empty list means all dims.
std::vector<bool> reduced_mask(const Tensor& a, const std::vector<int64_t>& dims, const char* op) {
  std::vector<bool> m(a.dim(), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(a.dim(), 1), op, a);  // a 0-d tensor takes dim 0 or -1
    if (a.dim() == 0) continue;
    if (m[w]) throw std::invalid_argument(std::string(op) + ": dim " + std::to_string(d) + " listed twice");
    m[w] = true;
  }
  return m;
}

Shape keepdim_shape(const Shape& s, const std::vector<bool>& m) {
  Shape k = s;
  for (size_t i = 0; i < s.size(); ++i)
    if (m[i]) k[i] = 1;
  return k;
}

Shape squeezed_shape(const Shape& s, const std::vector<bool>& m) {
  Shape k;
  for (size_t i = 0; i < s.size(); ++i)
    if (!m[i]) k.push_back(s[i]);
  return k;
}

// A reduction's result in the keepdim shape (contiguous), as keepdim asks: itself, or a view
// without the reduced dims of `in_shape`.
Tensor apply_keepdim(const Tensor& kept, const Shape& in_shape, const std::vector<bool>& m, bool keepdim) {
  if (keepdim) return kept;
  const Shape s = squeezed_shape(in_shape, m);
  return make_view(kept, s, contiguous_strides(s), 0);
}

// Sums a (any float tensor) into the keepdim shape, accumulating in double so that float32
// sums do not drift with the number of terms.
Tensor sum_kernel(const Tensor& a, const std::vector<bool>& m) {
  const Tensor x = kernels::dense(a);
  const Shape ks = keepdim_shape(a.shape(), m);
  Tensor out = Tensor::empty(ks, a.dtype());
  const int64_t n_out = out.numel(), n = x.numel();
  std::vector<double> acc(static_cast<size_t>(n_out), 0.0);
  // Leading dims reduced, the rest kept (a bias gradient, Σ over rows of (rows, C)): columns
  // are split across threads, each column still summed over the rows in order, so the result
  // has the same bits on any thread count.
  int64_t lead = 0;
  while (lead < a.dim() && m[static_cast<size_t>(lead)]) ++lead;
  bool prefix = lead > 0 && lead < a.dim();
  for (int64_t d = lead; d < a.dim(); ++d) prefix = prefix && !m[static_cast<size_t>(d)];
  AG_DISPATCH_FLOAT(a.dtype(), "sum", [&] {
    const scalar_t* px = x.data<scalar_t>();
    const int64_t nd = a.dim();
    if (prefix && n_out > 0) {
      const int64_t rows = n / n_out;  // (rows, n_out)
      parallel::parallel_for(n_out, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(rows, 1)),
                             [&](int64_t c0, int64_t c1) {
                               for (int64_t r = 0; r < rows; ++r)
                                 for (int64_t c = c0; c < c1; ++c) acc[c] += px[r * n_out + c];
                             });
    } else if (nd == 0 || n == 0) {
      if (n) acc[0] = px[0];
    } else {
      // Output strides with 0 along reduced dims; walk the input one row at a time.
      Shape ost = contiguous_strides(ks);
      for (int64_t d = 0; d < nd; ++d)
        if (m[d]) ost[d] = 0;
      const int64_t inner = a.shape()[nd - 1];
      const int64_t inner_st = ost[nd - 1];
      for_each_row<1>(a.shape(), {ost.data()}, {0}, [&](int64_t r, const std::array<int64_t, 1>& off) {
        const int64_t i = r * inner, o = off[0];
        if (inner_st == 0) {
          double s = 0;
          for (int64_t j = 0; j < inner; ++j) s += px[i + j];
          acc[o] += s;
        } else {
          for (int64_t j = 0; j < inner; ++j) acc[o + j] += px[i + j];
        }
      });
    }
    scalar_t* po = out.data<scalar_t>();
    for (int64_t i = 0; i < n_out; ++i) po[i] = static_cast<scalar_t>(acc[i]);
  });
  return out;
}

Tensor reduce_sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim, double scale, const char* op) {
  AG_PROFILE_OP(op);
  kernels::check_float(a, op);
  const std::vector<bool> m = reduced_mask(a, dims, op);
  Tensor out = sum_kernel(a, m);
  if (scale != 1.0) out = kernels::map_float(out, op, [scale](auto v) { return v * static_cast<decltype(v)>(scale); });
  if (!keepdim) out = make_view(out, squeezed_shape(a.shape(), m), contiguous_strides(squeezed_shape(a.shape(), m)), 0);
  if (should_record({&a})) {
    record(out, op, {a}, [in_shape = a.shape(), ks = keepdim_shape(a.shape(), m), scale](const Tensor& g) {
      // out = scale · Σ a over the dims  =>  da = scale · g, broadcast back over those dims
      Tensor gk = reshape(g, ks);
      if (scale != 1.0) gk = mul(gk, scale);
      return Grads{expand(gk, in_shape)};
    });
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& a) { return reduce_sum(a, {}, false, 1.0, "sum"); }

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  if (dims.empty()) throw std::invalid_argument("sum: empty dim list (use sum(a) to reduce everything)");
  return reduce_sum(a, dims, keepdim, 1.0, "sum");
}

Tensor mean(const Tensor& a) {
  kernels::check_float(a, "mean");
  if (a.numel() == 0) throw std::invalid_argument("mean: empty tensor " + describe(a));
  return reduce_sum(a, {}, false, 1.0 / static_cast<double>(a.numel()), "mean");
}

Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  if (dims.empty()) throw std::invalid_argument("mean: empty dim list (use mean(a) to reduce everything)");
  kernels::check_float(a, "mean");
  const std::vector<bool> m = reduced_mask(a, dims, "mean");
  int64_t count = 1;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (m[i]) count *= a.shape()[i];
  if (count == 0) throw std::invalid_argument("mean: reducing over an empty dim of " + describe(a));
  return reduce_sum(a, dims, keepdim, 1.0 / static_cast<double>(count), "mean");
}

namespace {
// Max (or min) over one dim: writes values and/or indices, the first extreme on a tie.
void max_kernel(const Tensor& a, int64_t d, Tensor* values, Tensor* indices, bool is_min, const char* op) {
  const int64_t n = a.shape()[d];
  if (n == 0) throw std::invalid_argument(std::string(op) + ": reducing over an empty dim of " + describe(a));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= a.shape()[i];
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.shape()[i];
  const Tensor x = kernels::dense(a);
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* pv = values ? values->data<scalar_t>() : nullptr;
    int64_t* pi = indices ? indices->data<int64_t>() : nullptr;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        const scalar_t* row = px + o * n * inner + k;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j)
          if ((is_min ? row[j * inner] < row[best * inner] : row[j * inner] > row[best * inner]) ||
              std::isnan(row[j * inner])) {
            best = j;
            if (std::isnan(row[j * inner])) break;  // NaN propagates, as in PyTorch
          }
        if (pv) pv[o * inner + k] = row[best * inner];
        if (pi) pi[o * inner + k] = best;
      }
  });
}

Shape reduced_shape_one(const Tensor& a, int64_t d, bool keepdim) {
  Shape s = a.shape();
  if (keepdim) s[d] = 1;
  else s.erase(s.begin() + d);
  return s;
}

// Checks a for max/min/argmax and returns the wrapped dim.
int64_t check_extreme(const Tensor& a, int64_t dim, const char* op) {
  kernels::check_float(a, op);
  if (a.dim() == 0) throw std::invalid_argument(std::string(op) + ": needs at least a 1-d tensor, got " + describe(a));
  return wrap_dim(dim, a.dim(), op, a);
}

// max or min values along d. Backward: the gradient of each output goes to the element that
// was selected (the index saved from the forward), as in PyTorch; the rest of a gets 0.
Tensor extreme_along(const Tensor& a, int64_t dim, bool keepdim, bool is_min, const char* op) {
  AG_PROFILE_OP(op);
  const int64_t d = check_extreme(a, dim, op);
  Tensor v = Tensor::empty(reduced_shape_one(a, d, keepdim), a.dtype());
  Tensor idx = Tensor::empty(reduced_shape_one(a, d, /*keepdim=*/true), DType::Int64);  // a's shape, 1 along d
  max_kernel(a, d, &v, &idx, is_min, op);
  if (should_record({&a})) {
    record(v, op, {a}, [sidx = SavedTensor::save(idx), d, keepdim, a_shape = a.shape()](const Tensor& g) {
      // out = a[..., idx, ...] along d  =>  da = zeros with g at idx (scatter_add: differentiable)
      const Tensor gk = keepdim ? g : unsqueeze(g, d);
      return Grads{scatter_add(Tensor::zeros(a_shape, g.dtype()), d, sidx.unpack(), gk)};
    });
  }
  return v;
}
}  // namespace

Tensor max(const Tensor& a, int64_t dim, bool keepdim) { return extreme_along(a, dim, keepdim, false, "max"); }
Tensor min(const Tensor& a, int64_t dim, bool keepdim) { return extreme_along(a, dim, keepdim, true, "min"); }

Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  const int64_t d = check_extreme(a, dim, "argmax");
  Tensor i = Tensor::empty(reduced_shape_one(a, d, keepdim), DType::Int64);
  max_kernel(a, d, nullptr, &i, false, "argmax");
  return i;
}

Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  const int64_t d = check_extreme(a, dim, "argmin");
  Tensor i = Tensor::empty(reduced_shape_one(a, d, keepdim), DType::Int64);
  max_kernel(a, d, nullptr, &i, true, "argmin");
  return i;
}

// ---- amax, amin, norm: over any dims -------------------------------------------------------------

namespace {
// The largest (or smallest) value over the dims of mask m, in the keepdim shape; NaN wins.
Tensor extreme_kernel(const Tensor& a, const std::vector<bool>& m, bool is_min, const char* op) {
  // The reduced dims are moved last (a permuted copy), so each output is one contiguous row.
  std::vector<int64_t> perm;
  int64_t R = 1;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!m[d]) perm.push_back(d);
  for (int64_t d = 0; d < a.dim(); ++d)
    if (m[d]) {
      perm.push_back(d);
      R *= a.shape()[d];
    }
  if (R == 0) throw std::invalid_argument(std::string(op) + ": reducing over an empty dim of " + describe(a));
  const Tensor x = kernels::dense(permute(a.detach(), perm));  // (kept..., reduced...)
  Tensor out = Tensor::empty(keepdim_shape(a.shape(), m), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    for (int64_t o = 0, n_out = out.numel(); o < n_out; ++o) {
      const scalar_t* row = px + o * R;
      scalar_t v = row[0];
      for (int64_t j = 1; j < R && !std::isnan(v); ++j)
        if (std::isnan(row[j]) || (is_min ? row[j] < v : row[j] > v)) v = row[j];
      po[o] = v;
    }
  });
  return out;
}

// amax (or amin) over dims. Backward: g shared equally among the elements equal to the
// extreme, as PyTorch's amax (and its max() over all elements) does.
Tensor extreme_over(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim, bool is_min, const char* op) {
  AG_PROFILE_OP(op);
  kernels::check_float(a, op);
  const std::vector<bool> m = reduced_mask(a, dims, op);
  const Shape ks = keepdim_shape(a.shape(), m);
  const Tensor ok = extreme_kernel(a, m, is_min, op);  // keepdim shape
  Tensor out = apply_keepdim(ok, a.shape(), m, keepdim);
  if (should_record({&a})) {
    record(out, op, {a}, [sa = SavedTensor::save(a), sy = SavedTensor::save_output(out), m, ks](const Tensor& g) {
      // out = max over dims  =>  da = g / count where a == out, 0 elsewhere (count = the number
      // of elements tied for the extreme in that slice). The share is piecewise constant in a:
      // computed from the values alone, so its own derivative is 0.
      const Tensor a = sa.unpack().detach(), y = sy.unpack().detach();
      const Tensor hit = eq(a, reshape(y, ks)).to(a.dtype());  // 1 where a is the extreme
      const Tensor share = div(hit, sum_kernel(hit, m));
      return Grads{mul(reshape(g, ks), share)};
    });
  }
  return out;
}
}  // namespace

Tensor amax(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return extreme_over(a, dims, keepdim, false, "amax");
}
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return extreme_over(a, dims, keepdim, true, "amin");
}

Tensor norm(const Tensor& a, double p, const std::vector<int64_t>& dims, bool keepdim) {
  AG_PROFILE_OP("norm");
  kernels::check_float(a, "norm");
  if (p != 2.0) throw std::invalid_argument("norm: only p = 2 is supported, got p = " + std::to_string(p));
  const std::vector<bool> m = reduced_mask(a, dims, "norm");
  const Shape ks = keepdim_shape(a.shape(), m);
  // out = √(Σ a²) over the dims (accumulated in double by sum_kernel)
  const Tensor sq = kernels::map_float(a, "norm", [](auto x) { return x * x; });
  const Tensor ok = kernels::map_float(sum_kernel(sq, m), "norm", [](auto x) { return std::sqrt(x); });
  Tensor out = apply_keepdim(ok, a.shape(), m, keepdim);
  if (should_record({&a})) {
    record(out, "norm", {a}, [sa = SavedTensor::save(a), sy = SavedTensor::save_output(out), ks](const Tensor& g) {
      // out = ‖a‖  =>  da = g · a / out, and 0 where out = 0, as PyTorch (a subgradient). The
      // zero test is piecewise constant; dividing by 1 there keeps higher orders finite.
      const Tensor a = sa.unpack(), y = reshape(sy.unpack(), ks);
      const Tensor zero = eq(y.detach(), 0.0), one = Tensor::ones({}, y.dtype()), nil = Tensor::zeros({}, y.dtype());
      const Tensor scale = where(zero, nil, div(reshape(g, ks), where(zero, one, y)));
      return Grads{mul(a, scale)};
    });
  }
  return out;
}

}  // namespace ag
