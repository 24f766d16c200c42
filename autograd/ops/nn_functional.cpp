// Fused, numerically stable ops: softmax, log_softmax, layer_norm, dropout (cross_entropy is
// with the other losses, in loss.cpp).
// Each is one node with a hand-written backward, so no intermediate is stored twice. The
// backward kernels of softmax and log_softmax are ops of their own (softmax_backward,
// log_softmax_backward), each with its own backward written with ops; layer_norm's kernel goes
// through fused_backward, which takes its higher derivatives from layer_norm_definition
// (ops/fused_backward.h).
#include <cmath>
#include <limits>
#include <type_traits>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/softmax.h"
#include "autograd/ops.h"
#include "autograd/ops/fused_backward.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"
#include "autograd/random_ops.h"

namespace ag {

namespace {
// Checks a and wraps dim; true when dim is the last one (the fused kernel's case).
bool is_last_dim(const Tensor& a, int64_t dim, const char* op) {
  kernels::check_float(a, op);
  if (a.dim() == 0) throw std::invalid_argument(std::string(op) + ": needs at least a 1-d tensor, got " + describe(a));
  return wrap_dim(dim, a.dim(), op, a) == a.dim() - 1;
}

// Checks the (grad, output) pair of a softmax-like backward op; true when dim is the last one.
bool check_backward_args(const Tensor& g, const Tensor& y, int64_t dim, const char* op) {
  kernels::check_same_dtype(g, y, op);
  if (g.shape() != y.shape())
    throw std::invalid_argument(std::string(op) + ": grad " + describe(g) + " and output " + describe(y) +
                                " differ in shape");
  return is_last_dim(y, dim, op);
}

// dx = row(y, g) over the last dim of a softmax-like backward op: row(y, g, dx, C) on each row.
template <class Row>
Tensor last_dim_rows(const Tensor& grad, const Tensor& output, const char* op, Row row) {
  const int64_t C = output.size(-1), rows = C ? output.numel() / C : 0;
  const Tensor G = kernels::dense(grad), Y = kernels::dense(output);
  Tensor dx = Tensor::empty(grad.shape(), grad.dtype());
  AG_DISPATCH_FLOAT(grad.dtype(), op, [&] {
    for (int64_t r = 0; r < rows; ++r)
      row(Y.data<scalar_t>() + r * C, G.data<scalar_t>() + r * C, dx.data<scalar_t>() + r * C, C);
  });
  return dx;
}
}  // namespace

Tensor softmax(const Tensor& a, int64_t dim) {
  AG_PROFILE_OP("softmax");
  // Another dim is swapped with the last (a view), normalised there, and swapped back; the
  // two transposes carry the gradient, so the fused last-dim kernel is the only one.
  if (!is_last_dim(a, dim, "softmax")) return transpose(softmax(transpose(a, dim, -1), -1), dim, -1);
  const int64_t C = a.size(-1), rows = C ? a.numel() / C : 0;
  const Tensor x = kernels::dense(a);
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), "softmax", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* py = y.data<scalar_t>();
    parallel::parallel_for(rows, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(C, 1)),
                           [&](int64_t r0, int64_t r1) {
                             for (int64_t r = r0; r < r1; ++r) kernels::softmax_row(px + r * C, py + r * C, C);
                           });
  });
  if (should_record({&a})) {
    record(y, "softmax", {a}, [sy = SavedTensor::save_output(y)](const Tensor& g) {
      // y = softmax(x)  =>  dx = y ⊙ (g − Σ_j g_j y_j)
      return Grads{softmax_backward(g, sy.unpack(), -1)};
    });
  }
  return y;
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim) {
  AG_PROFILE_OP("softmax_backward");
  if (!check_backward_args(grad, output, dim, "softmax_backward"))
    return transpose(softmax_backward(transpose(grad, dim, -1), transpose(output, dim, -1), -1), dim, -1);
  Tensor dx = last_dim_rows(grad, output, "softmax_backward", [](const auto* y, const auto* g, auto* d, int64_t C) {
    kernels::softmax_row_backward(y, g, d, C);
  });
  if (should_record({&grad, &output})) {
    record(dx, "softmax_backward", {grad, output},
           [sg = SavedTensor::save(grad), sy = SavedTensor::save(output)](const Tensor& u) {
             // dx = y ⊙ (g − Σ_j g_j y_j)  =>  dg = y ⊙ (u − Σ_j u_j y_j),
             //                                 dy = u ⊙ (g − Σ_j g_j y_j) − g · Σ_j u_j y_j
             const Tensor g = sg.unpack(), y = sy.unpack();
             const Tensor dy = sub(mul(u, sub(g, sum(mul(g, y), {-1}, /*keepdim=*/true))),
                                   mul(g, sum(mul(u, y), {-1}, /*keepdim=*/true)));
             return Grads{softmax_backward(u, y, -1), dy};
           });
  }
  return dx;
}

Tensor log_softmax(const Tensor& a, int64_t dim) {
  AG_PROFILE_OP("log_softmax");
  if (!is_last_dim(a, dim, "log_softmax")) return transpose(log_softmax(transpose(a, dim, -1), -1), dim, -1);
  const int64_t C = a.size(-1), rows = C ? a.numel() / C : 0;
  const Tensor x = kernels::dense(a);
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), "log_softmax", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* py = y.data<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* xr = px + r * C;
      scalar_t* yr = py + r * C;
      // y = x − max − log Σ exp(x − max)
      scalar_t m = -std::numeric_limits<scalar_t>::infinity();
      for (int64_t j = 0; j < C; ++j) m = std::max(m, xr[j]);
      double s = 0;
      for (int64_t j = 0; j < C; ++j) s += kernels::exp_fast_nonpositive(xr[j] - m);
      const scalar_t lse = m + static_cast<scalar_t>(std::log(s));
      for (int64_t j = 0; j < C; ++j) yr[j] = xr[j] - lse;
    }
  });
  if (should_record({&a})) {
    record(y, "log_softmax", {a}, [sy = SavedTensor::save_output(y)](const Tensor& g) {
      // y = log_softmax(x)  =>  dx = g − exp(y) · Σ_j g_j
      return Grads{log_softmax_backward(g, sy.unpack(), -1)};
    });
  }
  return y;
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim) {
  AG_PROFILE_OP("log_softmax_backward");
  if (!check_backward_args(grad, output, dim, "log_softmax_backward"))
    return transpose(log_softmax_backward(transpose(grad, dim, -1), transpose(output, dim, -1), -1), dim, -1);
  Tensor dx = last_dim_rows(grad, output, "log_softmax_backward", [](const auto* y, const auto* g, auto* d, int64_t C) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(y)>>;
    double gs = 0;
    for (int64_t j = 0; j < C; ++j) gs += g[j];
    for (int64_t j = 0; j < C; ++j) d[j] = g[j] - std::exp(y[j]) * static_cast<T>(gs);
  });
  if (should_record({&grad, &output})) {
    record(dx, "log_softmax_backward", {grad, output},
           [sg = SavedTensor::save(grad), sy = SavedTensor::save(output)](const Tensor& u) {
             // dx = g − exp(y) · Σ_j g_j  =>  dg = u − Σ_j u_j exp(y_j),  dy = −u ⊙ exp(y) · Σ_j g_j
             const Tensor ey = exp(sy.unpack());
             return Grads{sub(u, sum(mul(u, ey), {-1}, /*keepdim=*/true)),
                          neg(mul(mul(u, ey), sum(sg.unpack(), {-1}, /*keepdim=*/true)))};
           });
  }
  return dx;
}

namespace {
// layer_norm's backward kernel on dense X, W (or undefined), G and the forward's row statistics:
//   db = Σ_rows g,  dw = Σ_rows g ⊙ x̂,  dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)), dx̂ = g ⊙ w
// Only the wanted gradients (gx, gw, gb) are computed; the others are undefined.
Grads layer_norm_backward_kernel(const Tensor& X, const Tensor& W, const Tensor& G, const Tensor& mean,
                                 const Tensor& rstd, int64_t rows, int64_t C, bool gx, bool gw, bool gb) {
  Tensor dx = gx ? Tensor::empty(X.shape(), X.dtype()) : Tensor();
  Tensor dw = gw ? Tensor::zeros({C}, X.dtype()) : Tensor();
  Tensor db = gb ? Tensor::zeros({C}, X.dtype()) : Tensor();
  if (X.dtype() == DType::Float32) {
    // Rows split into a fixed number of parts, each summing its own dw and db; the
    // parts are then added in order, so the result depends only on the thread count.
    const bool split = rows * C >= 2 * kernels::kParallelGrain;
    const int64_t parts = split ? std::min<int64_t>(parallel::num_threads(), std::max<int64_t>(rows, 1)) : 1;
    std::vector<float> partial(static_cast<size_t>(2 * parts * C), 0.0f);  // (parts, 2, C)
    const float *px = X.data<float>(), *pw = W.defined() ? W.data<float>() : nullptr,
                *pm = mean.data<float>(), *pr = rstd.data<float>(), *pg = G.data<float>();
    float* pdx = gx ? dx.data<float>() : nullptr;
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
        float* pdw = partial.data() + (2 * part) * C;
        kernels::vec::layer_norm_backward(px + r0 * C, pw, pm + r0, pr + r0, pg + r0 * C,
                                          pdx ? pdx + r0 * C : nullptr, gw ? pdw : nullptr,
                                          gb ? pdw + C : nullptr, r1 - r0, C);
      }
    });
    for (int64_t part = 0; part < parts; ++part)
      for (int64_t j = 0; j < C; ++j) {
        if (gw) dw.data<float>()[j] += partial[(2 * part) * C + j];
        if (gb) db.data<float>()[j] += partial[(2 * part + 1) * C + j];
      }
    return Grads{dx, dw, db};
  }
  // float64 only (float32 returned above): the reference of the vector kernel
  const double* px = X.data<double>();
  const double* pg = G.data<double>();
  const double* pw = W.defined() ? W.data<double>() : nullptr;
  std::vector<double> dw_acc(gw ? C : 0, 0.0), db_acc(gb ? C : 0, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double m = mean.data<double>()[r], rs = rstd.data<double>()[r];
    const double* xr = px + r * C;
    const double* gr = pg + r * C;
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (int64_t j = 0; j < C; ++j) {
      const double xhat = (xr[j] - m) * rs;
      const double dxhat = gr[j] * (pw ? pw[j] : 1.0);
      mean_dxhat += dxhat;
      mean_dxhat_xhat += dxhat * xhat;
      if (gw) dw_acc[j] += gr[j] * xhat;
      if (gb) db_acc[j] += gr[j];
    }
    mean_dxhat /= static_cast<double>(C);
    mean_dxhat_xhat /= static_cast<double>(C);
    if (gx) {
      double* dr = dx.data<double>() + r * C;
      for (int64_t j = 0; j < C; ++j) {
        const double xhat = (xr[j] - m) * rs;
        const double dxhat = gr[j] * (pw ? pw[j] : 1.0);
        dr[j] = rs * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
      }
    }
  }
  for (int64_t j = 0; gw && j < C; ++j) dw.data<double>()[j] = dw_acc[j];
  for (int64_t j = 0; gb && j < C; ++j) db.data<double>()[j] = db_acc[j];
  return Grads{dx, dw, db};
}

// layer_norm's definition with ops (its higher derivatives come from it: fused_backward.h).
Tensor layer_norm_definition(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const Tensor xc = sub(x, mean(x, {-1}, /*keepdim=*/true));
  const Tensor xhat = mul(xc, pow(add(mean(mul(xc, xc), {-1}, /*keepdim=*/true), eps), -0.5));  // (x − μ)·rstd
  const Tensor y = w.defined() ? mul(xhat, w) : xhat;
  return b.defined() ? add(y, b) : y;
}
}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  AG_PROFILE_OP("layer_norm");
  kernels::check_float(x, "layer_norm");
  if (x.dim() == 0) throw std::invalid_argument("layer_norm: needs at least a 1-d input, got " + describe(x));
  const int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    kernels::check_same_dtype(x, *p, "layer_norm");
    if (p->dim() != 1 || p->size(0) != C)
      throw std::invalid_argument("layer_norm: weight/bias must be (" + std::to_string(C) + "), got " + describe(*p) +
                                  " for input " + describe(x));
  }
  const Tensor X = kernels::dense(x);
  const Tensor W = weight.defined() ? kernels::dense(weight) : Tensor();
  const Tensor B = bias.defined() ? kernels::dense(bias) : Tensor();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Tensor mean = Tensor::empty({rows}, x.dtype()), rstd = Tensor::empty({rows}, x.dtype());  // (rows)
  // A row longer than this (LayerNorm over several large dims: torch's test normalises 9.4M
  // elements together) has its mean and variance summed in double, as float64's always are: the
  // float lanes' sums drift by ~1e-4 there. Model widths stay far below it, on the vector kernel.
  constexpr int64_t kLongRow = int64_t{1} << 16;
  if (x.dtype() == DType::Float32 && C <= kLongRow) {  // run-time dispatched vector kernel, same formula
    const float *px = X.data<float>(), *pw = W.defined() ? W.data<float>() : nullptr,
                *pb = B.defined() ? B.data<float>() : nullptr;
    float *py = y.data<float>(), *pm = mean.data<float>(), *pr = rstd.data<float>();
    parallel::parallel_for(rows, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(C, 1)),
                           [&](int64_t r0, int64_t r1) {
                             kernels::vec::layer_norm_forward(px + r0 * C, pw, pb, py + r0 * C, pm + r0, pr + r0,
                                                              r1 - r0, C, static_cast<float>(eps));
                           });
  } else {  // the plain reference of the float32 kernel (tests/autograd/test_vec_kernels.cpp), sums in double
    AG_DISPATCH_FLOAT(x.dtype(), "layer_norm", [&] {
      const scalar_t* px = X.data<scalar_t>();
      const scalar_t* pw = W.defined() ? W.data<scalar_t>() : nullptr;
      const scalar_t* pb = B.defined() ? B.data<scalar_t>() : nullptr;
      scalar_t *py = y.data<scalar_t>(), *pm = mean.data<scalar_t>(), *pr = rstd.data<scalar_t>();
      for (int64_t r = 0; r < rows; ++r) {
        const scalar_t* xr = px + r * C;
        double m = 0, v = 0;
        for (int64_t j = 0; j < C; ++j) m += xr[j];
        m /= static_cast<double>(C);
        for (int64_t j = 0; j < C; ++j) v += (xr[j] - m) * (xr[j] - m);
        v /= static_cast<double>(C);  // biased variance, as PyTorch
        const double rs = 1.0 / std::sqrt(v + eps);
        pm[r] = static_cast<scalar_t>(m);
        pr[r] = static_cast<scalar_t>(rs);
        for (int64_t j = 0; j < C; ++j) {
          const double xhat = (xr[j] - m) * rs;
          py[r * C + j] = static_cast<scalar_t>((pw ? pw[j] : 1.0) * xhat + (pb ? pb[j] : 0.0));
        }
      }
    });
  }
  if (should_record({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(),
               gb = bias.defined() && bias.requires_grad();
    // X and W are x and weight themselves when contiguous (the usual case), else dense copies.
    // The bias is kept detached: no gradient depends on its value.
    record(y, "layer_norm", {x, weight, bias},
           [sX = SavedTensor::save(X), sW = SavedTensor::save(W), sx = SavedTensor::save(x),
            sw = SavedTensor::save(weight), b = bias.defined() ? bias.detach() : Tensor(), mean, rstd, rows, C, gx, gw,
            gb, eps](const Tensor& g) {
             // y = w ⊙ x̂ + b, x̂ = (x − μ)·rstd  =>
             //   db = Σ_rows g,  dw = Σ_rows g ⊙ x̂,
             //   dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)), dx̂ = g ⊙ w
             auto definition = [eps](const std::vector<Tensor>& in) { return layer_norm_definition(in[0], in[1], in[2], eps); };
             return fused_backward("layer_norm_backward", {sx.unpack(), sw.unpack(), b}, g, definition, [&] {
               return layer_norm_backward_kernel(sX.unpack(), sW.unpack(), kernels::dense(g), mean, rstd, rows, C, gx, gw, gb);
             });
           });
  }
  return y;
}

// Over several trailing dims: those dims as one (views when x is contiguous), the same kernel.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  const auto k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0)  // torch's message
    throw std::invalid_argument("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                                "element, but got normalized_shape = []");
  bool fits = x.dim() >= k;
  for (int64_t i = 1; fits && i <= k; ++i) fits = x.size(-i) == normalized_shape[static_cast<size_t>(k - i)];
  if (!fits) {  // torch's message
    std::string star = "[*";
    for (int64_t d : normalized_shape) star += ", " + std::to_string(d);
    throw std::invalid_argument("Given normalized_shape=" + shape_str(normalized_shape) + ", expected input with shape " +
                                star + "], but got input of size" + shape_str(x.shape()));
  }
  for (const auto& [p, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    if (p->defined() && p->shape() != normalized_shape)  // torch's message
      throw std::invalid_argument(std::string("Expected ") + what + " to be of same shape as normalized_shape, but got " +
                                  what + " of shape " + shape_str(p->shape()) + " and normalized_shape = " +
                                  shape_str(normalized_shape));
  if (k == 1) return layer_norm(x, weight, bias, eps);
  const int64_t C = shape_numel(normalized_shape);
  Shape rows(x.shape().begin(), x.shape().end() - k);
  rows.push_back(C);
  auto flat = [C](const Tensor& t) { return t.defined() ? reshape(t, {C}) : Tensor(); };
  return reshape(layer_norm(reshape(x, rows), flat(weight), flat(bias), eps), x.shape());
}

Tensor dropout(const Tensor& a, double p, bool training, Generator& gen) {
  AG_PROFILE_OP("dropout");
  kernels::check_float(a, "dropout");
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0.0) return a;
  // mask = keep / (1 − p): 0 where dropped, 1/(1−p) where kept (all 0 when p = 1).
  Tensor mask = Tensor::empty(a.shape(), a.dtype());
  if (gen.kind() == GeneratorKind::Torch) {
    // torch's: bernoulli_(1 − p), then divided by 1 − p in the dtype; p = 1 draws nothing.
    if (p == 1.0) {
      fill_values(mask, 0.0);
    } else {
      bernoulli_(mask, 1.0 - p, gen);
      AG_DISPATCH_FLOAT(a.dtype(), "dropout", [&] {
        scalar_t* pm = mask.data<scalar_t>();
        const auto q = static_cast<scalar_t>(1.0 - p);
        for (int64_t i = 0, n = mask.numel(); i < n; ++i) pm[i] = pm[i] / q;
      });
    }
  } else {
    AG_DISPATCH_FLOAT(a.dtype(), "dropout", [&] {
      scalar_t* pm = mask.data<scalar_t>();
      const scalar_t keep = p < 1.0 ? static_cast<scalar_t>(1.0 / (1.0 - p)) : scalar_t(0);
      for (int64_t i = 0, n = mask.numel(); i < n; ++i) pm[i] = gen.uniform() < p ? scalar_t(0) : keep;
    });
  }
  Tensor out = kernels::zip_float(a, mask, "dropout", [](auto x, auto m) { return x * m; });
  if (should_record({&a}))
    // out = a ⊙ mask  =>  da = g ⊙ mask
    record(out, "dropout", {a}, [sm = SavedTensor::save(mask)](const Tensor& g) { return Grads{mul(g, sm.unpack())}; });
  return out;
}

}  // namespace ag
