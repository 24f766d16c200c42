// Lookups (index_select, embedding) whose backward scatter-adds, and masked_fill.
#include <cstring>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

namespace {
void check_index(const Tensor& index, int64_t limit, const char* op) {
  if (!index.defined() || index.dtype() != DType::Int64)
    throw std::invalid_argument(std::string(op) + ": indices must be int64, got " + describe(index));
  const Tensor ic = kernels::dense(index);
  const int64_t* p = ic.data<int64_t>();
  for (int64_t i = 0, n = ic.numel(); i < n; ++i)
    if (p[i] < 0 || p[i] >= limit)
      throw std::out_of_range(std::string(op) + ": index " + std::to_string(p[i]) + " out of range [0, " +
                              std::to_string(limit) + ")");
}

// out[o, i, k] = a[o, idx[i], k] with a viewed as (outer, n, inner); rows are memcpy'd.
template <class T>
void gather_rows(const T* a, const int64_t* idx, int64_t n_idx, int64_t outer, int64_t n, int64_t inner, T* out) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n_idx; ++i)
      std::memcpy(out + (o * n_idx + i) * inner, a + (o * n + idx[i]) * inner, sizeof(T) * inner);
}

// The backward of gather_rows: da[o, idx[i], k] += g[o, i, k]. Repeated indices add up.
template <class T>
void scatter_add_rows(const T* g, const int64_t* idx, int64_t n_idx, int64_t outer, int64_t n, int64_t inner, T* da) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n_idx; ++i) {
      T* dst = da + (o * n + idx[i]) * inner;
      const T* src = g + (o * n_idx + i) * inner;
      for (int64_t k = 0; k < inner; ++k) dst[k] += src[k];
    }
}

// The backward of a selection as an op of its own, so that it can be recorded (create_graph):
// da (a_shape, viewed as (outer, n, inner)) = zeros with g's rows scatter-added at the 1-d
// index I along the middle dim. Its own backward
// selects the rows again.
Tensor scatter_add_along(const Tensor& g, const Tensor& I, const Shape& a_shape, int64_t outer, int64_t n,
                         int64_t inner, int64_t n_idx) {
  AG_PROFILE_OP("index_select_backward");
  Tensor da = Tensor::zeros(a_shape, g.dtype());
  const Tensor G = kernels::dense(g);
  AG_DISPATCH_FLOAT(g.dtype(), "index_select_backward", [&] {
    scatter_add_rows(G.data<scalar_t>(), I.data<int64_t>(), n_idx, outer, n, inner, da.data<scalar_t>());
  });
  if (should_record({&g})) {
    record(da, "index_select_backward", {g}, [sI = SavedTensor::save(I), g_shape = g.shape(), outer, inner](const Tensor& gg) {
      // da[..., index[i], ...] += g[..., i, ...]  =>  dg[..., i, ...] = gg[..., index[i], ...]
      Tensor sel = index_select(reshape(gg, {outer, gg.numel() / std::max<int64_t>(outer * inner, 1), inner}), 1, sI.unpack());
      return Grads{reshape(sel, g_shape)};
    });
  }
  return da;
}

// index_select and embedding share this: select n_idx entries along dim d of a.
Tensor select_along(const Tensor& a, int64_t d, const Tensor& index, const Shape& out_shape, const char* op) {
  AG_PROFILE_OP(op);
  kernels::check_float(a, op);
  check_index(index, a.shape()[d], op);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= a.shape()[i];
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.shape()[i];
  const int64_t n = a.shape()[d], n_idx = index.numel();
  const Tensor A = kernels::dense(a), I = kernels::dense(index);
  Tensor out = Tensor::empty(out_shape, a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), op, [&] {
    gather_rows(A.data<scalar_t>(), I.data<int64_t>(), n_idx, outer, n, inner, out.data<scalar_t>());
  });
  if (should_record({&a})) {
    record(out, op, {a}, [sI = SavedTensor::save(make_view(I, {n_idx}, {1}, I.impl().offset)), a_shape = a.shape(), outer, n, inner, n_idx](const Tensor& g) {
      // out = a[..., index, ...]  =>  da[..., index[i], ...] += g[..., i, ...]
      return Grads{scatter_add_along(g, sI.unpack(), a_shape, outer, n, inner, n_idx)};
    });
  }
  return out;
}
}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  if (!index.defined() || index.dim() != 1)
    throw std::invalid_argument("index_select: index must be 1-d, got " + describe(index));
  const int64_t d = wrap_dim(dim, a.dim(), "index_select", a);
  Shape s = a.shape();
  s[d] = index.numel();
  return select_along(a, d, index, s, "index_select");
}

Tensor embedding(const Tensor& ids, const Tensor& weight) {
  if (!weight.defined() || weight.dim() != 2)
    throw std::invalid_argument("'weight' must be 2-D (embedding: the weight is (num_embeddings, dim), got " +
                                (weight.defined() ? describe(weight) : std::string("an undefined Tensor")) + ")");
  Shape s = ids.defined() ? ids.shape() : Shape{};
  s.push_back(weight.size(1));
  return select_along(weight, 0, ids, s, "embedding");
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  AG_PROFILE_OP("masked_fill");
  kernels::check_float(a, "masked_fill");
  if (!mask.defined() || mask.dtype() != DType::Bool)
    throw std::invalid_argument("masked_fill: mask must be bool, got " + describe(mask));
  const Shape s = broadcast_shapes(a.shape(), mask.shape(), "masked_fill");
  if (s != a.shape())
    throw std::invalid_argument("masked_fill: mask " + describe(mask) + " must broadcast to the input " + describe(a));
  // Expand the mask to a's shape as 0/1 in a's dtype, then combine element-wise.
  Tensor m = make_view(mask, a.shape(), kernels::broadcast_strides(mask, a.shape()), mask.impl().offset).contiguous();
  const Tensor A = kernels::dense(a);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  const bool* pm = m.data<bool>();
  AG_DISPATCH_FLOAT(a.dtype(), "masked_fill", [&] {
    const scalar_t* pa = A.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    const scalar_t v = static_cast<scalar_t>(value);
    for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = pm[i] ? v : pa[i];
  });
  if (should_record({&a})) {
    record(out, "masked_fill", {a}, [sm = SavedTensor::save(m)](const Tensor& g) {
      // out = mask ? value : a  =>  da = g where the mask is false, 0 where it is true: masked_fill
      // itself (the mask is already expanded to a's shape, so nothing is copied again)
      return Grads{masked_fill(g, sm.unpack(), 0.0)};
    });
  }
  return out;
}

}  // namespace ag
