// RMSNorm (Zhang & Sennrich 2019) over the last dim, as torch.nn.functional.rms_norm:
//   y = x · rstd ⊙ w,  rstd = 1/√(mean(x²) + eps)
// One node with a forward kernel (the float32 one vectorised, kernels/vec.cpp) and a backward
// kernel; under create_graph the backward is the same formula written with ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/vec.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"

namespace ag {

namespace {

// dx (when gx) and dw (when gw) from the saved rstd; values only.
Grads rms_norm_backward_kernel(const Tensor& X, const Tensor& W, const Tensor& G, const Tensor& rstd, int64_t rows,
                               int64_t C, bool gx, bool gw) {
  Tensor dx = gx ? Tensor::empty(X.shape(), X.dtype()) : Tensor();
  Tensor dw = gw ? Tensor::zeros({C}, X.dtype()) : Tensor();
  if (X.dtype() == DType::Float32) {
    // Rows split into a fixed number of parts, each summing its own dw; the parts are then
    // added in order, so the result depends only on the thread count (as layer_norm's).
    const bool split = rows * C >= 2 * kernels::kParallelGrain;
    const int64_t parts = split ? std::min<int64_t>(parallel::num_threads(), std::max<int64_t>(rows, 1)) : 1;
    std::vector<float> partial(static_cast<size_t>(parts * C), 0.0f);  // (parts, C)
    const float *px = X.data<float>(), *pw = W.defined() ? W.data<float>() : nullptr, *pr = rstd.data<float>(),
                *pg = G.data<float>();
    float* pdx = gx ? dx.data<float>() : nullptr;
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
        kernels::vec::rms_norm_backward(px + r0 * C, pw, pr + r0, pg + r0 * C, pdx ? pdx + r0 * C : nullptr,
                                        gw ? partial.data() + part * C : nullptr, r1 - r0, C);
      }
    });
    for (int64_t part = 0; gw && part < parts; ++part)
      for (int64_t j = 0; j < C; ++j) dw.data<float>()[j] += partial[static_cast<size_t>(part * C + j)];
    return Grads{dx, dw};
  }
  // float64: the plain reference of the vector kernel
  const double *px = X.data<double>(), *pg = G.data<double>(), *pw = W.defined() ? W.data<double>() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const double rs = rstd.data<double>()[r];
    const double *xr = px + r * C, *gr = pg + r * C;
    double dot = 0;  // Σ dx̂·x̂
    for (int64_t j = 0; j < C; ++j) {
      const double xhat = xr[j] * rs;
      dot += gr[j] * (pw ? pw[j] : 1.0) * xhat;
      if (gw) dw.data<double>()[j] += gr[j] * xhat;
    }
    if (!gx) continue;
    double* dr = dx.data<double>() + r * C;
    for (int64_t j = 0; j < C; ++j)
      dr[j] = rs * (gr[j] * (pw ? pw[j] : 1.0) - xr[j] * rs * dot / static_cast<double>(C));
  }
  return Grads{dx, dw};
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Tensor& weight, std::optional<double> eps_opt) {
  kernels::check_float(x, "rms_norm");
  if (x.dim() == 0) throw std::invalid_argument("rms_norm: needs at least a 1-d input, got " + describe(x));
  const int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  if (weight.defined()) {
    kernels::check_same_dtype(x, weight, "rms_norm");
    if (weight.dim() != 1 || weight.size(0) != C)
      throw std::invalid_argument("rms_norm: weight must be (" + std::to_string(C) + "), got " + describe(weight) +
                                  " for input " + describe(x));
  }
  // torch's default: the machine epsilon of the input's dtype
  const double eps = eps_opt ? *eps_opt
                             : (x.dtype() == DType::Float32 ? double(std::numeric_limits<float>::epsilon())
                                                            : std::numeric_limits<double>::epsilon());
  if (!(eps >= 0)) throw std::invalid_argument("rms_norm: eps must be >= 0, got " + std::to_string(eps));
  const Tensor X = kernels::dense(x), W = weight.defined() ? kernels::dense(weight) : Tensor();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Tensor rstd = Tensor::empty({rows}, x.dtype());  // (rows)
  if (x.dtype() == DType::Float32) {
    const float* pw = W.defined() ? W.data<float>() : nullptr;
    parallel::parallel_for(rows, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(C, 1)),
                           [&](int64_t r0, int64_t r1) {
                             kernels::vec::rms_norm_forward(X.data<float>() + r0 * C, pw, y.data<float>() + r0 * C,
                                                            rstd.data<float>() + r0, r1 - r0, C, static_cast<float>(eps));
                           });
  } else {  // float64: the plain reference of the float32 kernel
    const double *px = X.data<double>(), *pw = W.defined() ? W.data<double>() : nullptr;
    double* py = y.data<double>();
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t j = 0; j < C; ++j) ss += px[r * C + j] * px[r * C + j];
      const double rs = 1.0 / std::sqrt(ss / static_cast<double>(C) + eps);
      rstd.data<double>()[r] = rs;
      for (int64_t j = 0; j < C; ++j) py[r * C + j] = px[r * C + j] * rs * (pw ? pw[j] : 1.0);
    }
  }
  if (should_record({&x, &weight})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad();
    record(y, "rms_norm", {x, weight},
           [sX = SavedTensor::save(X), sW = SavedTensor::save(W), sx = SavedTensor::save(x),
            sw = SavedTensor::save(weight), rstd, rows, C, gx, gw, eps](const Tensor& g) {
             // y = w ⊙ x̂, x̂ = x·rstd  =>  dw = Σ_rows g ⊙ x̂,  dx = rstd·(dx̂ − x̂·mean(dx̂ ⊙ x̂)), dx̂ = g ⊙ w
             if (GradMode::enabled()) {  // create_graph: the same with ops, from the graph-connected x
               const Tensor x = sx.unpack(), w = sw.unpack();
               const Tensor rs = pow(add(mean(mul(x, x), {-1}, /*keepdim=*/true), eps), -0.5);
               const Tensor xhat = mul(x, rs), dxhat = w.defined() ? mul(g, w) : g;
               std::vector<int64_t> lead(static_cast<size_t>(x.dim() - 1));
               for (size_t i = 0; i < lead.size(); ++i) lead[i] = static_cast<int64_t>(i);
               Tensor dx, dw;
               if (gx) dx = mul(rs, sub(dxhat, mul(xhat, mean(mul(dxhat, xhat), {-1}, /*keepdim=*/true))));
               if (gw) dw = lead.empty() ? mul(g, xhat) : sum(mul(g, xhat), lead);
               return Grads{dx, dw};
             }
             return rms_norm_backward_kernel(sX.unpack(), sW.unpack(), kernels::dense(g), rstd, rows, C, gx, gw);
           });
  }
  return y;
}

}  // namespace ag
