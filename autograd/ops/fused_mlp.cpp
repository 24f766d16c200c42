// The transformer's MLP as one node: y = gelu(x·W1ᵀ + b1)·W2ᵀ + b2.
//
// Why fused: each block of rows runs both GEMMs with the bias and GELU applied in between while
// that block's hidden activations are still in cache (one pool hand-off instead of four passes),
// and the backward forms dpre = dh ⊙ gelu'(pre) in place, summing db1 and db2 in the same pass.
// Memory: x (which the caller keeps anyway), h = gelu(pre) and gelu'(pre) are saved, as the
// composition keeps pre and h. The training forward evaluates Φ once per hidden value for both
// h and gelu'(pre), so the backward needs no GELU evaluation; recomputing h there instead
// would save one (rows, H) buffer per layer for over twice the GELU work (erfc and exp were
// over a quarter of the default step's time outside the GEMMs).
// The plain composition, linear(gelu(linear(x, W1, b1)), W2, b2) (gelu_mlp_definition), is its
// reference (tests/test_fused_mlp.cpp holds them equal), the path for degenerate sizes, and the
// source of its higher derivatives: the backward kernel is the only first derivative written
// here, and fused_backward (fused_backward.h) derives the rest from the composition.
#include <algorithm>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/vec.h"
#include "autograd/ops.h"
#include "autograd/ops/fused_backward.h"
#include "autograd/ops/gelu_math.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

// h = gelu(pre) over n values: the vector kernel for float, libm's formula for double.
void gelu_into(const float* pre, float* h, int64_t n) { kernels::vec::gelu_forward(pre, h, n); }
void gelu_into(const double* pre, double* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = detail::gelu_fwd(pre[i], false);
}
// h = gelu(pre) and pre ← gelu'(pre) over n values, for the backward.
void gelu_and_grad_into(float* pre, float* h, int64_t n) { kernels::vec::gelu_forward_and_grad(pre, h, n); }
void gelu_and_grad_into(double* pre, double* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    h[i] = detail::gelu_fwd(pre[i], false);
    pre[i] = detail::gelu_grad(pre[i], false);
  }
}

// Rows are split into this many parts (each one thread's block of both GEMMs): a function of
// the sizes and the thread count only, so the partial bias sums add up the same way each run.
int64_t row_parts(int64_t rows, int64_t work_per_row) {
  const bool split = rows * work_per_row >= 2 * kernels::kParallelGemmWork;
  return split ? std::min<int64_t>(parallel::num_threads(), std::max<int64_t>(rows, 1)) : 1;
}

void check_mlp_args(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  kernels::check_same_dtype(x, w1, "gelu_mlp");
  kernels::check_same_dtype(x, w2, "gelu_mlp");
  if (w1.dim() != 2 || w2.dim() != 2)
    throw std::invalid_argument("gelu_mlp: weights must be 2-d (out, in), got " + describe(w1) + " and " + describe(w2));
  if (x.dim() < 1 || x.size(-1) != w1.size(1))
    throw std::invalid_argument("gelu_mlp: input " + describe(x) + " does not end in in_features=" +
                                std::to_string(w1.size(1)) + " of W1 " + describe(w1));
  if (w2.size(1) != w1.size(0))
    throw std::invalid_argument("gelu_mlp: W2 " + describe(w2) + " must take the " + std::to_string(w1.size(0)) +
                                " hidden features of W1 " + describe(w1));
  for (auto [b, w] : {std::pair{&b1, &w1}, std::pair{&b2, &w2}}) {
    if (!b->defined()) continue;
    kernels::check_same_dtype(x, *b, "gelu_mlp");
    if (b->dim() != 1 || b->size(0) != w->size(0))
      throw std::invalid_argument("gelu_mlp: bias must be (" + std::to_string(w->size(0)) + "), got " + describe(*b));
  }
}

// The backward kernel (the formulas are at gelu_mlp's record() below), from the saved h =
// gelu(pre) and dact = gelu'(pre). Only the wanted gradients are computed; the others are
// undefined.
Grads gelu_mlp_backward_kernel(const Tensor& g, const Tensor& x, const Tensor& w1, const Tensor& w2,
                               const Tensor& dact, const Tensor& hidden, bool gx, bool gw1, bool gb1, bool gw2,
                               bool gb2) {
  const int64_t rows = dact.size(0), H = dact.size(1), E = w1.size(1), O = w2.size(0);
  const Tensor G = kernels::dense(g), X = kernels::dense(x);  // (rows, O), (rows, E)
  const Tensor W1 = kernels::dense(w1), W2 = kernels::dense(w2);
  Tensor dpre = Tensor::empty({rows, H}, G.dtype());  // (rows, H)
  Tensor dx = gx ? Tensor::empty(x.shape(), G.dtype()) : Tensor();
  const int64_t parts = row_parts(rows, O * H + H * E);
  Tensor partial = Tensor::zeros({parts, H + O}, G.dtype());  // per part: db1 | db2
  AG_DISPATCH_FLOAT(G.dtype(), "gelu_mlp_backward", [&] {
    const scalar_t *pg = G.data<scalar_t>(), *pa = dact.data<scalar_t>(), *pw1 = W1.data<scalar_t>(),
                   *pw2 = W2.data<scalar_t>();
    scalar_t *pd = dpre.data<scalar_t>(), *pacc = partial.data<scalar_t>();
    // Under bf16 autocast the weights rounded in the forward (the same storage), not again.
    const kernels::Bf16Matrix *w1r = autocast_weight(W1), *w2r = autocast_weight(W2);
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts, n = r1 - r0;
        if (n == 0) continue;
        // dh = g·W2  (n, O)·(O, H) -> (n, H), then dpre = dh ⊙ gelu'(pre) in place
        kernels::gemm(false, false, n, H, O, scalar_t(1), pg + r0 * O, O, pw2, H, w2r, scalar_t(0), pd + r0 * H, H);
        scalar_t *db1 = pacc + part * (H + O), *db2 = db1 + H;
        for (int64_t r = r0; r < r1; ++r) {
          scalar_t* dr = pd + r * H;
          const scalar_t* ar = pa + r * H;
          for (int64_t j = 0; j < H; ++j) {
            dr[j] *= ar[j];  // dpre = dh ⊙ gelu'(pre)
            db1[j] += dr[j];
          }
          for (int64_t j = 0; j < O; ++j) db2[j] += pg[r * O + j];
        }
        // dx = dpre·W1  (n, H)·(H, E) -> (n, E)
        if (gx)
          kernels::gemm(false, false, n, E, H, scalar_t(1), pd + r0 * H, H, pw1, E, w1r, scalar_t(0),
                        dx.data<scalar_t>() + r0 * E, E);
      }
    });
  });
  Tensor dw1, db1, dw2, db2;
  if (gw2) dw2 = matmul(transpose(reshape(G, {rows, O}), 0, 1), hidden);  // (O, H)
  if (gw1) dw1 = matmul(transpose(dpre, 0, 1), reshape(X, {rows, E}));  // (H, E)
  // The parts' bias sums, added in part order.
  Tensor sums = sum(partial, {0});  // (H + O)
  if (gb1) db1 = narrow(sums, 0, 0, H).contiguous();
  if (gb2) db2 = narrow(sums, 0, H, O).contiguous();
  return Grads{dx, dw1, db1, dw2, db2};
}

// gelu_mlp's definition with ops (the composition it is equal to); its higher derivatives come
// from it (fused_backward.h).
Tensor gelu_mlp_definition(const std::vector<Tensor>& in) {
  return linear(gelu(linear(in[0], in[1], in[2])), in[3], in[4]);
}

}  // namespace

Tensor gelu_mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  AG_PROFILE_OP("gelu_mlp");
  check_mlp_args(x, w1, b1, w2, b2);
  const int64_t E = w1.size(1), H = w1.size(0), O = w2.size(0), rows = x.numel() / std::max<int64_t>(E, 1);
  if (rows == 0 || E == 0 || H == 0 || O == 0)  // degenerate sizes: the composition handles them
    return gelu_mlp_definition({x, w1, b1, w2, b2});
  Shape out_shape = x.shape();
  out_shape.back() = O;
  const Tensor X = kernels::dense(x), W1 = kernels::dense(w1), W2 = kernels::dense(w2);
  const Tensor B1 = b1.defined() ? kernels::dense(b1) : Tensor(), B2 = b2.defined() ? kernels::dense(b2) : Tensor();
  const bool training = should_record({&x, &w1, &b1, &w2, &b2});
  // (rows, H): pre = x·W1ᵀ + b1; when training it becomes gelu'(pre), kept for the backward
  Tensor pre = Tensor::empty({rows, H}, x.dtype());
  Tensor hidden = Tensor::empty({rows, H}, x.dtype());  // h = gelu(pre), (rows, H): kept when training
  Tensor y = Tensor::empty(out_shape, x.dtype());       // (rows, O)
  const int64_t parts = row_parts(rows, H * E + O * H);
  AG_DISPATCH_FLOAT(x.dtype(), "gelu_mlp", [&] {
    const scalar_t *px = X.data<scalar_t>(), *pw1 = W1.data<scalar_t>(), *pw2 = W2.data<scalar_t>();
    const scalar_t *pb1 = B1.defined() ? B1.data<scalar_t>() : nullptr, *pb2 = B2.defined() ? B2.data<scalar_t>() : nullptr;
    scalar_t *pp = pre.data<scalar_t>(), *py = y.data<scalar_t>(), *ph = hidden.data<scalar_t>();
    // Under bf16 autocast: the weights rounded once per region, not once per part
    const kernels::Bf16Matrix *w1r = autocast_weight(W1), *w2r = autocast_weight(W2);
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts, n = r1 - r0;
        if (n == 0) continue;
        scalar_t* h = ph + r0 * H;  // this block's gelu(pre), (n, H)
        // pre = b1 + x·W1ᵀ  (n, E)·(H, E)ᵀ -> (n, H)
        if (pb1) kernels::fill_rows_with_bias(pp + r0 * H, H, pb1, n, H);
        kernels::gemm(false, true, n, H, E, scalar_t(1), px + r0 * E, E, pw1, E, w1r, scalar_t(pb1 ? 1 : 0), pp + r0 * H, H);
        // h = gelu(pre) (and pre ← gelu'(pre) when training) row by row, in cache
        for (int64_t r = 0; r < n; ++r) {
          scalar_t* pr = pp + (r0 + r) * H;
          if (training)
            gelu_and_grad_into(pr, h + r * H, H);
          else
            gelu_into(pr, h + r * H, H);
        }
        // y = b2 + h·W2ᵀ  (n, H)·(O, H)ᵀ -> (n, O)
        if (pb2) kernels::fill_rows_with_bias(py + r0 * O, O, pb2, n, O);
        kernels::gemm(false, true, n, O, H, scalar_t(1), h, H, pw2, H, w2r, scalar_t(pb2 ? 1 : 0), py + r0 * O, O);
      }
    });
  });
  if (training) {
    const bool gx = x.requires_grad(), gw1 = w1.requires_grad(), gb1 = b1.defined() && b1.requires_grad(),
               gw2 = w2.requires_grad(), gb2 = b2.defined() && b2.requires_grad();
    // b2 is kept detached: no gradient depends on its value.
    record(y, "gelu_mlp", {x, w1, b1, w2, b2},
           [sx = SavedTensor::save(x), sw1 = SavedTensor::save(w1), sb1 = SavedTensor::save(b1),
            sw2 = SavedTensor::save(w2), b2 = b2.defined() ? b2.detach() : Tensor(), dact = pre, hidden, gx, gw1, gb1,
            gw2, gb2](const Tensor& g) {
             // y = h·W2ᵀ + b2, h = gelu(pre), pre = x·W1ᵀ + b1  =>
             //   db2 = Σ_rows g,  dW2 = gᵀ·h,  dh = g·W2,  dpre = dh ⊙ gelu'(pre),
             //   db1 = Σ_rows dpre,  dW1 = dpreᵀ·x,  dx = dpre·W1
             // (h and gelu'(pre) = dact were saved by the forward.)
             const Tensor x = sx.unpack(), w1 = sw1.unpack(), w2 = sw2.unpack();
             return fused_backward("gelu_mlp_backward", {x, w1, sb1.unpack(), w2, b2}, g, gelu_mlp_definition, [&] {
               return gelu_mlp_backward_kernel(g, x, w1, w2, dact, hidden, gx, gw1, gb1, gw2, gb2);
             });
           });
  }
  return y;
}

}  // namespace ag
