// var and logsumexp, composed of ops of ops.h: their gradients (of any order) are those of
// the ops they are built from, so there is no hand-written backward here to get wrong.
#include <cmath>
#include <numeric>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"

namespace ag {

namespace {
// The dims to reduce, wrapped and checked; every dim when `dims` is empty.
std::vector<int64_t> reduce_dims(const Tensor& a, const std::vector<int64_t>& dims, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    out.resize(a.dim());
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  std::vector<bool> seen(a.dim(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(a.dim(), 1), op, a);
    if (a.dim() == 0) continue;  // a 0-d tensor takes dim 0 or -1 and has nothing to reduce
    if (seen[w]) throw std::invalid_argument(std::string(op) + ": dim " + std::to_string(d) + " listed twice");
    seen[w] = true;
    out.push_back(w);
  }
  return out;
}

// Σ over dims (all of a 0-d tensor: itself), keeping them as size 1.
Tensor sum_keep(const Tensor& a, const std::vector<int64_t>& dims) {
  return dims.empty() ? a : sum(a, dims, /*keepdim=*/true);
}

// Drops the size-1 dims that sum_keep kept, unless keepdim.
Tensor finish(const Tensor& t, const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim || dims.empty()) return t;
  Shape s;
  std::vector<bool> reduced(a.dim(), false);
  for (int64_t d : dims) reduced[d] = true;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (!reduced[i]) s.push_back(a.shape()[i]);
  return reshape(t, s);
}
}  // namespace

Tensor var(const Tensor& a, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  kernels::check_float(a, "var");
  if (!std::isfinite(correction) || correction < 0)
    throw std::invalid_argument("var: correction must be a finite number >= 0, got " + std::to_string(correction));
  const std::vector<int64_t> ds = reduce_dims(a, dims, "var");
  int64_t n = 1;
  for (int64_t d : ds) n *= a.shape()[d];
  if (n == 0) throw std::invalid_argument("var: reducing over an empty dim of " + describe(a));
  // var = Σ (a − mean)² / max(0, N − correction); N − correction <= 0 gives inf or NaN, as PyTorch.
  const Tensor centred = sub(a, mul(sum_keep(a, ds), 1.0 / static_cast<double>(n)));  // a's shape
  const Tensor ss = sum_keep(mul(centred, centred), ds);                              // 1 along ds
  const double denom = std::max(0.0, static_cast<double>(n) - correction);
  return finish(mul(ss, 1.0 / denom), a, ds, keepdim);
}

Tensor logsumexp(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  kernels::check_float(a, "logsumexp");
  const std::vector<int64_t> ds = reduce_dims(a, dims, "logsumexp");
  // m = the max over ds, a constant: lse = m + log Σ exp(a − m) for any m, so its gradient
  // does not depend on m. An infinite m (a slice of −inf, or +inf) is replaced by 0 so that
  // a − m has no inf − inf.
  Tensor m = a.detach();
  for (int64_t d : ds) m = max(m, d, /*keepdim=*/true);
  m = kernels::map_float(m, "logsumexp", [](auto x) { return std::isinf(x) ? decltype(x)(0) : x; });  // 1 along ds
  const Tensor lse = add(log(sum_keep(exp(sub(a, m)), ds)), m);
  return finish(lse, a, ds, keepdim);
}

}  // namespace ag
