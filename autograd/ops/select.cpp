// Ops that pick values rather than compute them: where, maximum, minimum, clamp, gather and
// scatter_add. Their gradients route g to the picked positions; each backward is written with
// ops of ops.h (where, gather, scatter_add, mul), so with create_graph it is recorded and can
// be differentiated again. The masks that route g are piecewise constant in the inputs, so
// they are computed from detached values.
#include <array>
#include <cmath>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

using kernels::zip_float;

Tensor zero_like_scalar(const Tensor& g) { return Tensor::zeros({}, g.dtype()); }

// A bool tensor of a and b broadcast together: pred(a_i, b_i). Values only, no graph.
template <class P>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, P pred) {
  return zip_float(a.detach(), b.detach(), op,
                   [pred](auto x, auto y) { return pred(x, y) ? decltype(x)(1) : decltype(x)(0); })
      .to(DType::Bool);
}

}  // namespace

// ---- where -------------------------------------------------------------------------------------

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("where");
  kernels::check_same_dtype(a, b, "where");
  if (!cond.defined() || cond.dtype() != DType::Bool)
    throw std::invalid_argument("where: cond must be bool, got " + describe(cond) + " (with " + describe(a) + " and " +
                                describe(b) + ")");
  const Shape s = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(s, a.dtype());  // the three shapes broadcast
  if (out.numel() > 0) {
    // Read each operand through its broadcast strides (0 along broadcast dims).
    const Shape s1 = s.empty() ? Shape{1} : s;
    auto bst = [&](const Tensor& t) { return s.empty() ? Shape{0} : kernels::broadcast_strides(t, s); };
    const Shape sc = bst(cond), sa = bst(a), sb = bst(b);
    const bool* pc = static_cast<const bool*>(cond.impl().storage->data);
    AG_DISPATCH_FLOAT(a.dtype(), "where", [&] {
      const scalar_t* pa = static_cast<const scalar_t*>(a.impl().storage->data);
      const scalar_t* pb = static_cast<const scalar_t*>(b.impl().storage->data);
      scalar_t* po = out.data<scalar_t>();
      const int64_t inner = s1.back(), ic = sc.back(), ia = sa.back(), ib = sb.back();
      for_each_row<3>(s1, {sc.data(), sa.data(), sb.data()}, {cond.impl().offset, a.impl().offset, b.impl().offset},
                      [&](int64_t r, const std::array<int64_t, 3>& o) {
                        scalar_t* row = po + r * inner;
                        for (int64_t j = 0; j < inner; ++j)
                          row[j] = pc[o[0] + j * ic] ? pa[o[1] + j * ia] : pb[o[2] + j * ib];
                      });
    });
  }
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, "where", {a, b},
           [scond = SavedTensor::save(cond), ga, gb](const Tensor& g) {
             // out = cond ? a : b  =>  da = g where cond (0 elsewhere), db = g where !cond (the
             // engine sums them over the dims a and b were broadcast along)
             const Tensor cond = scond.unpack(), zero = zero_like_scalar(g);
             return Grads{ga ? where(cond, g, zero) : Tensor(), gb ? where(cond, zero, g) : Tensor()};
           });
  }
  return out;
}

// ---- maximum, minimum, clamp ---------------------------------------------------------------------

namespace {
// maximum (is_max) or minimum of a and b, broadcast; NaN in either input gives NaN.
Tensor extremum(const Tensor& a, const Tensor& b, bool is_max, const char* op) {
  AG_PROFILE_OP(op);
  Tensor out = zip_float(a, b, op, [is_max](auto x, auto y) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
    return (is_max ? x > y : x < y) ? x : y;
  });
  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, op, {a, b},
           [sa = SavedTensor::save(a), sb = SavedTensor::save(b), ga, gb, is_max, op](const Tensor& g) {
             // out = max(a, b)  =>  da = g where a > b, g/2 where a == b, 0 where a < b; db mirrored
             // (min: the same with < and > swapped). Written with where, not a 0/1 product, so an
             // infinite g cannot turn into 0·inf = NaN where an input lost.
             const Tensor a = sa.unpack().detach(), b = sb.unpack().detach();  // the masks are piecewise constant
             const Tensor eq = compare(a, b, op, [](auto x, auto y) { return x == y; });
             const Tensor a_lost = compare(a, b, op, [is_max](auto x, auto y) { return is_max ? x < y : x > y; });
             const Tensor b_lost = compare(a, b, op, [is_max](auto x, auto y) { return is_max ? x > y : x < y; });
             const Tensor zero = zero_like_scalar(g), split = where(eq, mul(g, 0.5), g);
             return Grads{ga ? where(a_lost, zero, split) : Tensor(), gb ? where(b_lost, zero, split) : Tensor()};
           });
  }
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(a, b, true, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(a, b, false, "minimum"); }

Tensor clamp(const Tensor& a, std::optional<double> lo, std::optional<double> hi) {
  AG_PROFILE_OP("clamp");
  if (!lo && !hi) throw std::invalid_argument("clamp: give at least one of min and max (input " + describe(a) + ")");
  const double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
  Tensor out = kernels::map_float(a, "clamp", [l, h](auto x) {  // same shape as a
    using T = decltype(x);
    const T y = x < T(l) ? T(l) : x;  // NaN compares false and stays NaN
    return y > T(h) ? T(h) : y;
  });
  if (should_record({&a})) {
    const bool has_lo = lo.has_value(), has_hi = hi.has_value();
    record(out, "clamp", {a}, [sa = SavedTensor::save(a), l, h, has_lo, has_hi](const Tensor& g) {
      // out = min(max(a, lo), hi)  =>  da = g where lo < a < hi, else 0: at a bound itself the
      // gradient is 0, as in PyTorch 2 (a missing bound puts no condition on its side)
      const Tensor inside = kernels::map_float(sa.unpack().detach(), "clamp_backward", [l, h, has_lo, has_hi](auto x) {
                              using T = decltype(x);
                              return (!has_lo || x > T(l)) && (!has_hi || x < T(h)) ? T(1) : T(0);
                            }).to(DType::Bool);
      return Grads{where(inside, g, zero_like_scalar(g))};
    });
  }
  return out;
}

// ---- gather and scatter_add -------------------------------------------------------------------------

namespace {
// Checks gather/scatter_add arguments and returns the wrapped dim.
int64_t check_gather(const Tensor& a, int64_t dim, const Tensor& index, const char* op) {
  kernels::check_float(a, op);
  if (!index.defined() || index.dtype() != DType::Int64)
    throw std::invalid_argument(std::string(op) + ": index must be int64, got " + describe(index));
  if (a.dim() == 0 || index.dim() != a.dim())
    throw std::invalid_argument(std::string(op) + ": index " + describe(index) + " must have the rank of the input " +
                                describe(a) + " (at least 1-d)");
  const int64_t d = wrap_dim(dim, a.dim(), op, a);
  for (int64_t k = 0; k < a.dim(); ++k)
    if (k != d && index.shape()[k] > a.shape()[k])
      throw std::invalid_argument(std::string(op) + ": index " + describe(index) + " is larger than the input " +
                                  describe(a) + " in dim " + std::to_string(k));
  return d;
}

// For every element i of the contiguous index I, calls f(a_off, i): a_off is the offset, in a
// contiguous tensor of a_shape, of the element that index element addresses (its own position,
// with index[i] along d). Throws for an index outside [0, a_shape[d]).
template <class F>
void for_each_indexed(const Shape& a_shape, int64_t d, const Tensor& I, const char* op, F f) {
  if (I.numel() == 0) return;
  const Shape ast = contiguous_strides(a_shape), ist = contiguous_strides(I.shape());
  Shape ast0 = ast;
  ast0[d] = 0;  // the position along d comes from the index value
  const int64_t* pi = I.data<int64_t>();
  const int64_t n = a_shape[d], inner = I.shape().back(), last = ast0.back(), along = ast[d];
  for_each_row<2>(I.shape(), {ast0.data(), ist.data()}, {0, 0}, [&](int64_t, const std::array<int64_t, 2>& off) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t v = pi[off[1] + j];
      if (v < 0 || v >= n)
        throw std::out_of_range(std::string(op) + ": index " + std::to_string(v) + " out of range [0, " +
                                std::to_string(n) + ") along dim " + std::to_string(d));
      f(off[0] + j * last + v * along, off[1] + j);
    }
  });
}
}  // namespace

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  AG_PROFILE_OP("gather");
  const int64_t d = check_gather(a, dim, index, "gather");
  const Tensor A = kernels::dense(a), I = kernels::dense(index);
  Tensor out = Tensor::empty(index.shape(), a.dtype());  // index's shape
  AG_DISPATCH_FLOAT(a.dtype(), "gather", [&] {
    const scalar_t* pa = A.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    for_each_indexed(a.shape(), d, I, "gather", [&](int64_t a_off, int64_t i) { po[i] = pa[a_off]; });
  });
  if (should_record({&a})) {
    record(out, "gather", {a}, [si = SavedTensor::save(index), a_shape = a.shape(), d](const Tensor& g) {
      // out = a[..., index, ...] along d  =>  da = zeros with g added at the gathered places
      return Grads{scatter_add(Tensor::zeros(a_shape, g.dtype()), d, si.unpack(), g)};
    });
  }
  return out;
}

Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  AG_PROFILE_OP("scatter_add");
  const int64_t d = check_gather(a, dim, index, "scatter_add");
  kernels::check_same_dtype(a, src, "scatter_add");
  if (src.shape() != index.shape())
    throw std::invalid_argument("scatter_add: src " + describe(src) + " must have the shape of index " +
                                describe(index));
  const Tensor I = kernels::dense(index), S = kernels::dense(src);
  Tensor out = a.detach().clone();  // a's shape, contiguous
  AG_DISPATCH_FLOAT(a.dtype(), "scatter_add", [&] {
    const scalar_t* ps = S.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    for_each_indexed(a.shape(), d, I, "scatter_add", [&](int64_t a_off, int64_t i) { po[a_off] += ps[i]; });
  });
  if (should_record({&a, &src})) {
    const bool ga = a.requires_grad(), gs = src.requires_grad();
    record(out, "scatter_add", {a, src}, [si = SavedTensor::save(index), d, ga, gs](const Tensor& g) {
      // out = a; out[..., index, ...] += src  =>  da = g, dsrc = g read back at those places
      return Grads{ga ? g : Tensor(), gs ? gather(g, d, si.unpack()) : Tensor()};
    });
  }
  return out;
}

}  // namespace ag
