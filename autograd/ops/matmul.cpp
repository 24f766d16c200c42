// matmul and linear on BLAS. Transposed operands (views whose last two dims are swapped)
// go to BLAS with the transpose flag instead of being copied.
#include <memory>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

// How BLAS can read the last two dims (rows, cols) of t in place: row-major with leading
// dimension ld (trans=false), or as the transpose of a row-major matrix (trans=true).
struct MatLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

MatLayout blas_layout(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.shape()[nd - 2], cols = t.shape()[nd - 1];
  const int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  if ((cs == 1 || cols == 1) && rs >= std::max<int64_t>(cols, 1)) return {true, false, rs};
  if ((rs == 1 || rows == 1) && cs >= std::max<int64_t>(rows, 1)) return {true, true, cs};
  return {};
}

// A tensor BLAS can read, plus how: t itself when its layout fits, else a contiguous copy.
std::pair<Tensor, MatLayout> blas_operand(const Tensor& t) {
  MatLayout l = blas_layout(t);
  if (l.ok) return {t, l};
  Tensor c = t.detach().contiguous();
  return {c, blas_layout(c)};
}

// Under bf16 autocast: y (rows, out) = [bias +] x·Wᵀ with x (rows, in) rounded into x_rounded,
// kept for dW. float64 is never rounded: its overload is never reached.
void linear_rounded_forward(kernels::Bf16Matrix& x_rounded, const float* x, int64_t rows, int64_t in_f,
                            const kernels::Bf16Matrix& w_rounded, const float* bias, float* y, int64_t out_f) {
  kernels::round_rows_parallel(x_rounded, x, rows, in_f, in_f);
  kernels::gemm_rows_rounded(false, true, rows, out_f, in_f, 1.0f, x_rounded, w_rounded, bias ? 1.0f : 0.0f, bias, y,
                             out_f);
}
void linear_rounded_forward(kernels::Bf16Matrix&, const double*, int64_t, int64_t, const kernels::Bf16Matrix&,
                            const double*, double*, int64_t) {
  throw std::logic_error("linear: a float64 operand reached the bf16 path");
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  AG_PROFILE_OP("matmul");
  kernels::check_same_dtype(a, b, "matmul");
  if (a.dim() == 0 || b.dim() == 0)
    throw std::invalid_argument("matmul: both operands need at least 1 dim, got " + describe(a) + " @ " + describe(b));
  if (a.dim() == 1 || b.dim() == 1) {
    // PyTorch's rule: a vector operand becomes a matrix, (K) -> (1, K) on the left and
    // (K) -> (K, 1) on the right, and that added dim is removed from the result. Views only,
    // so the gradient flows through unsqueeze/squeeze back to the vector.
    const Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a, b2 = b.dim() == 1 ? unsqueeze(b, 1) : b;
    if (a2.size(-1) != b2.size(-2))
      throw std::invalid_argument("matmul: inner dims differ, " + describe(a) + " @ " + describe(b) + " (" +
                                  std::to_string(a2.size(-1)) + " vs " + std::to_string(b2.size(-2)) + ")");
    Tensor out = matmul(a2, b2);
    if (b.dim() == 1) out = squeeze(out, -1);  // (..., M, 1) -> (..., M)
    if (a.dim() == 1) out = squeeze(out, b.dim() == 1 ? -1 : -2);  // (..., 1, N) -> (..., N); both 1-d: (1) -> 0-d
    return out;
  }
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    throw std::invalid_argument("matmul: inner dims differ, " + describe(a) + " @ " + describe(b) + " (" +
                                std::to_string(K) + " vs " + std::to_string(b.size(-2)) + ")");
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul (batch dims)");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out = Tensor::empty(out_shape, a.dtype());

  // (plain variables, not structured bindings: lambdas below capture them)
  const auto opa = blas_operand(a), opb = blas_operand(b);
  const Tensor& A = opa.first;
  const Tensor& B = opb.first;
  const MatLayout la = opa.second, lb = opb.second;
  // Per-batch element offsets of A and B (stride 0 along broadcast batch dims).
  const int64_t nb = shape_numel(batch), nbd = static_cast<int64_t>(batch.size());
  auto batch_strides = [&](const Tensor& t) {
    Shape st(nbd, 0);
    const int64_t td = t.dim() - 2;
    for (int64_t i = 0; i < td; ++i)
      if (t.shape()[i] != 1) st[nbd - td + i] = t.strides()[i];
    return st;
  };
  const Shape sa = batch_strides(A), sb = batch_strides(B);
  AG_DISPATCH_FLOAT(a.dtype(), "matmul", [&] {
    const scalar_t* pa = A.template data<scalar_t>();
    const scalar_t* pb = B.template data<scalar_t>();
    scalar_t* pc = out.data<scalar_t>();
    if (M * N == 0) return;
    if (K == 0) {
      std::fill(pc, pc + nb * M * N, scalar_t(0));
      return;
    }
    if (nb == 1) {  // one product: split its rows across threads (b a weight: rounded once per autocast region)
      kernels::gemm_rows(la.trans, lb.trans, M, N, K, scalar_t(1), pa, la.ld, pb, lb.ld, scalar_t(0), pc, N,
                         autocast_weight(B));
      return;
    }
    // Many products: whole products per thread. Element offsets of batch i in A and B come
    // from its multi-index (stride 0 along broadcast batch dims).
    const int64_t grain = std::max<int64_t>(1, kernels::kParallelGemmWork / std::max<int64_t>(M * N * K, 1));
    parallel::parallel_for(nb, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) {
        int64_t oa = 0, ob = 0, rest = i;
        for (int64_t d = nbd - 1; d >= 0; --d) {
          const int64_t id = rest % batch[d];
          rest /= batch[d];
          oa += id * sa[d];
          ob += id * sb[d];
        }
        kernels::gemm(la.trans, lb.trans, M, N, K, scalar_t(1), pa + oa, la.ld, pb + ob, lb.ld, scalar_t(0),
                      pc + i * M * N, N);
      }
    });
  });

  if (should_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(out, "matmul", {a, b}, [sa = gb ? SavedTensor::save(a) : SavedTensor(), sb = ga ? SavedTensor::save(b) : SavedTensor(),
                                   ga, gb](const Tensor& g) {
      // out = a @ b  =>  da = g @ bᵀ, db = aᵀ @ g  (the engine sums them over broadcast batch dims)
      Tensor da, db;
      if (ga) da = matmul(g, transpose(sb.unpack(), -1, -2));
      if (gb) db = matmul(transpose(sa.unpack(), -1, -2), g);
      return Grads{da, db};
    });
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  AG_PROFILE_OP("linear");
  kernels::check_same_dtype(x, weight, "linear");
  if (weight.dim() != 2) throw std::invalid_argument("linear: weight must be 2-d (out, in), got " + describe(weight));
  const int64_t out_f = weight.size(0), in_f = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != in_f)
    throw std::invalid_argument("linear: input " + describe(x) + " does not end in in_features=" + std::to_string(in_f) +
                                " of weight " + describe(weight));
  if (bias.defined()) {
    kernels::check_same_dtype(x, bias, "linear");
    if (bias.dim() != 1 || bias.size(0) != out_f)
      throw std::invalid_argument("linear: bias must be (" + std::to_string(out_f) + "), got " + describe(bias));
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_f;
  const int64_t rows = x.numel() / std::max<int64_t>(in_f, 1);
  // x and weight themselves when contiguous (the usual case), else copies; under grad mode a
  // copy is recorded (a clone node), so the saved copy keeps its place in the graph and the
  // backward below can read it whether or not it is being recorded.
  const Tensor X = x.contiguous(), W = weight.contiguous();
  Tensor out = Tensor::empty(out_shape, x.dtype());
  const bool recording = should_record({&x, &weight, &bias});
  // Under bf16 autocast, when the weight's gradient will read x (dW = gᵀ·x), x is rounded once
  // here and the copy kept for the backward (torch's autocast saves its bf16 input likewise).
  std::shared_ptr<kernels::Bf16Matrix> x_rounded;
  AG_DISPATCH_FLOAT(x.dtype(), "linear", [&] {
    scalar_t* py = out.data<scalar_t>();
    const Tensor bb = bias.defined() ? kernels::dense(bias) : Tensor();
    const scalar_t* pb = bias.defined() ? bb.data<scalar_t>() : nullptr;
    if (rows * out_f == 0) return;
    if (in_f == 0) {  // no products: the bias, or zeros
      if (pb) kernels::fill_rows_with_bias(py, out_f, pb, rows, out_f);
      else std::fill(py, py + rows * out_f, scalar_t(0));
      return;
    }
    // (rows, in) @ (out, in)ᵀ -> (rows, out), onto the bias when there is one
    const scalar_t *px = X.data<scalar_t>(), *pw = W.data<scalar_t>();
    const kernels::Bf16Matrix* wr = autocast_weight(W);  // under bf16 autocast: rounded once per region
    if (wr && recording && weight.requires_grad()) {  // (never for float64: no weight copies)
      x_rounded = std::make_shared<kernels::Bf16Matrix>();
      linear_rounded_forward(*x_rounded, px, rows, in_f, *wr, pb, py, out_f);
      return;
    }
    if (pb)
      kernels::gemm_rows_bias(false, true, rows, out_f, in_f, px, in_f, pw, in_f, pb, py, out_f, wr);
    else
      kernels::gemm_rows(false, true, rows, out_f, in_f, scalar_t(1), px, in_f, pw, in_f, scalar_t(0), py, out_f, wr);
  });
  if (recording) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad(), gb = bias.defined() && bias.requires_grad();
    record(out, "linear", {x, weight, bias}, [sX = gw ? SavedTensor::save(X) : SavedTensor(),
                                              sW = gx ? SavedTensor::save(W) : SavedTensor(), x_rounded, gx, gw, gb,
                                              rows, in_f, out_f, x_shape = x.shape()](const Tensor& g) {
      // y = x·Wᵀ + b  =>  dx = g·W,  dW = gᵀ·x,  db = Σ_rows g
      const Tensor G = reshape(g, {rows, out_f});  // (rows, out)
      Tensor dx, dw, db;
      if (x_rounded && !GradMode::enabled() && is_autocast_enabled() &&
          x_rounded->native() == kernels::bf16_path_is_native()) {
        // bf16 autocast, first order: g rounded once for both GEMMs, x's copy from the forward.
        const Tensor Gd = kernels::dense(G);
        (void)sX.unpack();  // x itself is not read, but a changed x must still be an error
        kernels::Bf16Matrix g_rounded;  // (rows, out)
        if (gb) {  // db = Σ_rows g, summed as g is read for its rounding
          db = Tensor::empty({out_f}, DType::Float32);
          kernels::round_rows_parallel_summing_columns(g_rounded, Gd.data<float>(), rows, out_f, out_f,
                                                       db.data<float>());
        } else {
          kernels::round_rows_parallel(g_rounded, Gd.data<float>(), rows, out_f, out_f);
        }
        if (gx) {
          const Tensor W = sW.unpack();
          kernels::Bf16Matrix w_local;
          const kernels::Bf16Matrix* wr = autocast_weight(W);
          if (!wr || wr->native() != g_rounded.native()) {
            w_local.round(W.data<float>(), out_f, in_f, in_f, g_rounded.native());
            wr = &w_local;
          }
          dx = Tensor::empty({rows, in_f}, DType::Float32);  // (rows, out)·(out, in)
          kernels::gemm_rows_rounded(false, false, rows, in_f, out_f, 1.0f, g_rounded, *wr, 0.0f, nullptr,
                                     dx.data<float>(), in_f);
          dx = reshape(dx, x_shape);
        }
        dw = Tensor::empty({out_f, in_f}, DType::Float32);  // (rows, out)ᵀ·(rows, in)
        kernels::gemm_rows_rounded(true, false, out_f, in_f, rows, 1.0f, g_rounded, *x_rounded, 0.0f, nullptr,
                                   dw.data<float>(), in_f);
        return Grads{dx, dw, db};
      }
      if (gx) dx = reshape(matmul(G, sW.unpack()), x_shape);                          // (rows, in)
      if (gw) dw = matmul(transpose(G, 0, 1), reshape(sX.unpack(), {rows, in_f}));  // (out, in)
      if (gb) db = sum(G, {0});                                                     // (out)
      return Grads{dx, dw, db};
    });
  }
  return out;
}

}  // namespace ag
