// The transformer's MLP as one node: y = gelu(x·W1ᵀ + b1)·W2ᵀ + b2.
//
// Why fused: each block of rows runs both GEMMs with the bias and GELU applied in between while
// that block's hidden activations are still in cache (one pool hand-off instead of four passes),
// and the backward forms dpre = dh ⊙ gelu'(pre) in place, summing db1 and db2 in the same pass.
// Memory: x (which the caller keeps anyway), h = gelu(pre) and gelu'(pre) are saved, as the
// composition keeps pre and h; under bf16 autocast h is kept only rounded (GELU writes it so).
// The training forward evaluates Φ once per hidden value for both h and gelu'(pre), so the
// backward needs no GELU evaluation; recomputing h there instead would save one (rows, H)
// buffer per layer for over twice the GELU work (erfc and exp were over a quarter of the
// default step's time outside the GEMMs).
// The plain composition, linear(gelu(linear(x, W1, b1)), W2, b2) (gelu_mlp_definition), is its
// reference (tests/autograd/test_fused_mlp.cpp holds them equal), the path for degenerate sizes, and the
// source of its higher derivatives: the backward kernel is the only first derivative written
// here, and fused_backward (fused_backward.h) derives the rest from the composition.
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/bf16_matrix.h"
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

// Under bf16 autocast: rows [r0, r1) of A (row stride lda) rounded into `a` (which keeps them
// for a later GEMM), then C (r1 − r0, N) = beta·C + those rows · op(B), B rounded already.
// float64 is never rounded: its overload is never reached (no rounded copies are made for it).
void rounded_rows(kernels::Bf16Matrix& a, const float* A, int64_t lda, int64_t r0, int64_t r1) {
  a.round_rows(A, lda, r0, r1);
}
void rounded_rows(kernels::Bf16Matrix&, const double*, int64_t, int64_t, int64_t) {
  throw std::logic_error("gelu_mlp: a float64 operand reached the bf16 path");
}
// C (r1 − r0, N) = beta·C + rows [r0, r1) of a (rounded already) · op(B).
void gemm_of_rounded_rows(const kernels::Bf16Matrix& a, int64_t r0, int64_t r1, bool tb, int64_t N, int64_t K,
                          const kernels::Bf16Matrix& B, float beta, float* C, int64_t ldc) {
  kernels::gemm_rounded_rows(false, tb, r1 - r0, N, K, 1.0f, a, r0, B, beta, C, ldc);
}
void gemm_of_rounded_rows(const kernels::Bf16Matrix&, int64_t, int64_t, bool, int64_t, int64_t,
                          const kernels::Bf16Matrix&, double, double*, int64_t) {
  throw std::logic_error("gelu_mlp: a float64 operand reached the bf16 path");
}
void rounded_rows_gemm(kernels::Bf16Matrix& a, const float* A, int64_t lda, int64_t r0, int64_t r1, bool tb, int64_t N,
                       int64_t K, const kernels::Bf16Matrix& B, float beta, float* C, int64_t ldc) {
  rounded_rows(a, A, lda, r0, r1);
  gemm_of_rounded_rows(a, r0, r1, tb, N, K, B, beta, C, ldc);
}
void rounded_rows_gemm(kernels::Bf16Matrix&, const double*, int64_t, int64_t, int64_t, bool, int64_t, int64_t,
                       const kernels::Bf16Matrix&, double, double*, int64_t) {
  throw std::logic_error("gelu_mlp: a float64 operand reached the bf16 path");
}
// Under bf16 autocast when training: row `row` of h = gelu(pre), rounded as it is written, and
// pre ← gelu'(pre) over n values.
void gelu_and_grad_rounded_into(float* pre, kernels::Bf16Matrix& h, int64_t row, int64_t n) {
  if (h.native())
    kernels::vec::gelu_forward_and_grad_bf16(pre, h.bits_row(row), n);
  else
    kernels::vec::gelu_forward_and_grad_bf16(pre, h.values_row(row), n);
}
void gelu_and_grad_rounded_into(double*, kernels::Bf16Matrix&, int64_t, int64_t) {
  throw std::logic_error("gelu_mlp: a float64 operand reached the bf16 path");
}

// The float32 values a rounded copy holds (rows, cols).
Tensor values_of(const kernels::Bf16Matrix& m) {
  Tensor t = Tensor::empty({m.rows(), m.cols()}, DType::Float32);
  float* p = t.data<float>();
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t c = 0; c < m.cols(); ++c)
      p[r * m.cols() + c] = m.native() ? kernels::bf16_to_float(static_cast<const uint16_t*>(m.at(r, 0))[c])
                                       : static_cast<const float*>(m.at(r, 0))[c];
  return t;
}

// The fused MLP's backward rounds dpre (bf16 autocast) this many rows at a time, just computed.
constexpr int64_t kRoundRows = 16;

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
// Under bf16 autocast, x_rounded and h_rounded are the forward's bf16 copies of x and h (else
// null): with them g and dpre are rounded once each, for both GEMMs that read them.
Grads gelu_mlp_backward_kernel(const Tensor& g, const Tensor& x, const Tensor& w1, const Tensor& w2,
                               const Tensor& dact, const Tensor& hidden, const kernels::Bf16Matrix* x_rounded,
                               const kernels::Bf16Matrix* h_rounded, bool gx, bool gw1, bool gb1, bool gw2, bool gb2) {
  const int64_t rows = dact.size(0), H = dact.size(1), E = w1.size(1), O = w2.size(0);
  const Tensor G = kernels::dense(g), X = kernels::dense(x);  // (rows, O), (rows, E)
  const Tensor W1 = kernels::dense(w1), W2 = kernels::dense(w2);
  Tensor dpre = Tensor::empty({rows, H}, G.dtype());  // (rows, H)
  Tensor dx = gx ? Tensor::empty(x.shape(), G.dtype()) : Tensor();
  const int64_t parts = row_parts(rows, O * H + H * E);
  Tensor partial = Tensor::zeros({parts, H + O}, G.dtype());  // per part: db1 | db2
  bool rounded = false;                              // bf16 autocast with the forward's copies
  kernels::Bf16Matrix g_rounded, dpre_rounded;       // then (rows, O) and (rows, H)
  AG_DISPATCH_FLOAT(G.dtype(), "gelu_mlp_backward", [&] {
    const scalar_t *pg = G.data<scalar_t>(), *pa = dact.data<scalar_t>(), *pw1 = W1.data<scalar_t>(),
                   *pw2 = W2.data<scalar_t>();
    scalar_t *pd = dpre.data<scalar_t>(), *pacc = partial.data<scalar_t>();
    // Under bf16 autocast the weights rounded in the forward (the same storage), not again.
    const kernels::Bf16Matrix *w1r = autocast_weight(W1), *w2r = autocast_weight(W2);
    const bool native = kernels::bf16_path_is_native();
    rounded = x_rounded && h_rounded && w1r && w2r && x_rounded->native() == native && w1r->native() == native &&
              w2r->native() == native;
    if (rounded) {
      g_rounded.reshape(rows, O, w1r->native());
      dpre_rounded.reshape(rows, H, w1r->native());
    }
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts, n = r1 - r0;
        if (n == 0) continue;
        // dh = g·W2  (n, O)·(O, H) -> (n, H), then dpre = dh ⊙ gelu'(pre) in place
        if (rounded)
          rounded_rows_gemm(g_rounded, pg, O, r0, r1, false, H, O, *w2r, scalar_t(0), pd + r0 * H, H);
        else
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
          // dpre is rounded whether or not dx is wanted (dW1 reads it), kRoundRows rows at a time
          // while they are in cache
          const int64_t pending = (r - r0) % kRoundRows + 1;  // rows computed since the last rounding
          if (rounded && (pending == kRoundRows || r + 1 == r1))
            rounded_rows(dpre_rounded, pd, H, r + 1 - pending, r + 1);
        }
        // dx = dpre·W1  (n, H)·(H, E) -> (n, E)
        if (rounded) {
          if (gx)
            gemm_of_rounded_rows(dpre_rounded, r0, r1, false, E, H, *w1r, scalar_t(0), dx.data<scalar_t>() + r0 * E, E);
          continue;
        }
        if (gx)
          kernels::gemm(false, false, n, E, H, scalar_t(1), pd + r0 * H, H, pw1, E, w1r, scalar_t(0),
                        dx.data<scalar_t>() + r0 * E, E);
      }
    });
  });
  Tensor dw1, db1, dw2, db2;
  if (rounded) {  // the weights' gradients from the rounded g, dpre (just now) and x, h (the forward's)
    if (gw2) {
      dw2 = Tensor::empty({O, H}, DType::Float32);  // (rows, O)ᵀ·(rows, H)
      kernels::gemm_rows_rounded(true, false, O, H, rows, 1.0f, g_rounded, *h_rounded, 0.0f, nullptr,
                                 dw2.data<float>(), H);
    }
    if (gw1) {
      dw1 = Tensor::empty({H, E}, DType::Float32);  // (rows, H)ᵀ·(rows, E)
      kernels::gemm_rows_rounded(true, false, H, E, rows, 1.0f, dpre_rounded, *x_rounded, 0.0f, nullptr,
                                 dw1.data<float>(), E);
    }
  } else {
    // (a bf16 forward kept only h's rounded copy: its values, as torch's autocast keeps bf16 h)
    if (gw2) dw2 = matmul(transpose(reshape(G, {rows, O}), 0, 1), hidden.defined() ? hidden : values_of(*h_rounded));
    if (gw1) dw1 = matmul(transpose(dpre, 0, 1), reshape(X, {rows, E}));  // (H, E)
  }
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
  Tensor hidden;                                   // h = gelu(pre), (rows, H): kept when training
  Tensor y = Tensor::empty(out_shape, x.dtype());  // (rows, O)
  const int64_t parts = row_parts(rows, H * E + O * H);
  // Under bf16 autocast when training: x and h rounded once, part by part, and kept for the
  // weights' gradients (dW1 = dpreᵀ·x, dW2 = gᵀ·h), as torch's autocast keeps its bf16 inputs;
  // h is then rounded as GELU writes it, and no float32 h is kept.
  std::shared_ptr<kernels::Bf16Matrix> x_rounded, h_rounded;
  AG_DISPATCH_FLOAT(x.dtype(), "gelu_mlp", [&] {
    const scalar_t *px = X.data<scalar_t>(), *pw1 = W1.data<scalar_t>(), *pw2 = W2.data<scalar_t>();
    const scalar_t *pb1 = B1.defined() ? B1.data<scalar_t>() : nullptr, *pb2 = B2.defined() ? B2.data<scalar_t>() : nullptr;
    scalar_t *pp = pre.data<scalar_t>(), *py = y.data<scalar_t>();
    // Under bf16 autocast: the weights rounded once per region, not once per part
    const kernels::Bf16Matrix *w1r = autocast_weight(W1), *w2r = autocast_weight(W2);
    if (training && w1r && w2r && w1r->native() == w2r->native()) {  // (never for float64: no weight copies)
      x_rounded = std::make_shared<kernels::Bf16Matrix>();
      h_rounded = std::make_shared<kernels::Bf16Matrix>();
      x_rounded->reshape(rows, E, w1r->native());
      h_rounded->reshape(rows, H, w1r->native());
    } else {
      hidden = Tensor::empty({rows, H}, x.dtype());
    }
    const bool rounded = x_rounded != nullptr;  // x and h both rounded (bf16 autocast, training)
    scalar_t* ph = rounded ? nullptr : hidden.data<scalar_t>();
    parallel::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts, n = r1 - r0;
        if (n == 0) continue;
        // pre = b1 + x·W1ᵀ  (n, E)·(H, E)ᵀ -> (n, H). Under bf16 the GEMM writes x·W1ᵀ alone
        // and b1 is added row by row just before GELU reads the row (no pass writing b1 into
        // all of pre first, no GEMM reading it back). b1 then comes after the products rather
        // than before them; at the default and large models' widths the bits are the same.
        if (pb1 && !rounded) kernels::fill_rows_with_bias(pp + r0 * H, H, pb1, n, H);
        if (rounded)
          rounded_rows_gemm(*x_rounded, px, E, r0, r1, true, H, E, *w1r, scalar_t(0), pp + r0 * H, H);
        else
          kernels::gemm(false, true, n, H, E, scalar_t(1), px + r0 * E, E, pw1, E, w1r, scalar_t(pb1 ? 1 : 0),
                        pp + r0 * H, H);
        // h = gelu(pre) (and pre ← gelu'(pre) when training) row by row, in cache
        for (int64_t r = r0; r < r1; ++r) {
          scalar_t* pr = pp + r * H;
          if (rounded && pb1)
            for (int64_t j = 0; j < H; ++j) pr[j] += pb1[j];
          if (rounded)
            gelu_and_grad_rounded_into(pr, *h_rounded, r, H);
          else if (training)
            gelu_and_grad_into(pr, ph + r * H, H);
          else
            gelu_into(pr, ph + r * H, H);
        }
        // y = b2 + h·W2ᵀ  (n, H)·(O, H)ᵀ -> (n, O)
        if (pb2) kernels::fill_rows_with_bias(py + r0 * O, O, pb2, n, O);
        if (rounded)
          gemm_of_rounded_rows(*h_rounded, r0, r1, true, O, H, *w2r, scalar_t(pb2 ? 1 : 0), py + r0 * O, O);
        else
          kernels::gemm(false, true, n, O, H, scalar_t(1), ph + r0 * H, H, pw2, H, w2r, scalar_t(pb2 ? 1 : 0),
                        py + r0 * O, O);
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
            gw2, gb2, x_rounded, h_rounded](const Tensor& g) {
             // y = h·W2ᵀ + b2, h = gelu(pre), pre = x·W1ᵀ + b1  =>
             //   db2 = Σ_rows g,  dW2 = gᵀ·h,  dh = g·W2,  dpre = dh ⊙ gelu'(pre),
             //   db1 = Σ_rows dpre,  dW1 = dpreᵀ·x,  dx = dpre·W1
             // (h and gelu'(pre) = dact were saved by the forward.)
             const Tensor x = sx.unpack(), w1 = sw1.unpack(), w2 = sw2.unpack();
             return fused_backward("gelu_mlp_backward", {x, w1, sb1.unpack(), w2, b2}, g, gelu_mlp_definition, [&] {
               return gelu_mlp_backward_kernel(g, x, w1, w2, dact, hidden, x_rounded.get(), h_rounded.get(), gx, gw1,
                                               gb1, gw2, gb2);
             });
           });
  }
  return y;
}

}  // namespace ag
