// Losses, as torch.nn.functional's. mse_loss, l1_loss, binary_cross_entropy_with_logits,
// nll_loss and the weighted or class-probability forms of cross_entropy are composed of ops:
// their derivatives, of any order, are those of the ops. cross_entropy over class indices
// without weights (the training loss) is one fused node; its backward is an op of its own,
// cross_entropy_backward, whose forward is the float32 kernel and whose backward is written with
// ops, so each derivative is written once and the loss is differentiable to any order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/fast_math.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

// torch's reduction of per-element losses; the mean of an empty tensor is nan, as torch's.
Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return loss.numel() ? mean(loss) : mul(sum(loss), std::numeric_limits<double>::quiet_NaN());
  }
  throw std::invalid_argument("loss: unknown reduction");
}

// Class-index losses see the classes along dim 1 of (N, C, d1, ...) (dim 0 of an unbatched
// (C)). Rows: the input as (M, C) with the classes last, and the target as (M).
struct Rows {
  Tensor x;          // (M, C), a differentiable view or copy of the input
  Tensor t;          // (M) int64, contiguous
  Shape loss_shape;  // of reduction kNone: the target's
};

Rows to_rows(const Tensor& input, const Tensor& target, const char* op) {
  kernels::check_float(input, op);
  if (input.dim() == 0) throw std::invalid_argument(std::string(op) + ": input must be (N, C), (C) or (N, C, d1, ...), got " + describe(input));
  Shape want = input.shape();  // the target's shape: the input's without the class dim
  want.erase(want.begin() + (input.dim() == 1 ? 0 : 1));
  if (!target.defined() || target.dtype() != DType::Int64 || target.shape() != want)
    throw std::invalid_argument(std::string(op) + ": target must be int64 class indices " + shape_str(want) + " for input " +
                                describe(input) + ", got " + (target.defined() ? describe(target) : "undefined"));
  const int64_t C = input.size(input.dim() == 1 ? 0 : 1);
  Rows r;
  r.loss_shape = want;
  if (input.dim() == 1) r.x = unsqueeze(input, 0);  // (1, C)
  else if (input.dim() == 2) r.x = input;
  else {  // (N, C, d1, ...) -> (N, d1, ..., C) -> (M, C)
    std::vector<int64_t> perm = {0};
    for (int64_t d = 2; d < input.dim(); ++d) perm.push_back(d);
    perm.push_back(1);
    r.x = reshape(permute(input, perm), {-1, C});
  }
  r.t = kernels::dense(reshape(target.detach(), {-1}));
  return r;
}

// Checks every target is a class or ignore_index; returns how many are not ignored.
int64_t count_valid(const Tensor& t, int64_t C, int64_t ignore_index, const char* op) {
  const int64_t* pt = t.data<int64_t>();
  int64_t n_valid = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (pt[i] == ignore_index) continue;
    if (pt[i] < 0 || pt[i] >= C)
      throw std::out_of_range(std::string(op) + ": target " + std::to_string(pt[i]) + " at row " + std::to_string(i) +
                              " out of range [0, " + std::to_string(C) + ")");
    ++n_valid;
  }
  return n_valid;
}

// The per-row weighted negative log-likelihood of log-probabilities x (M, C), all with ops:
// loss_i = −w[t_i]·x[i, t_i] (w = 1 without weight), 0 for ignored rows; and the kMean divisor
// Σ w[t_i] over the rows not ignored. Ignored rows pick class 0 and are zeroed by `where`
// before any product, so a −inf there cannot turn into nan.
struct RowLoss {
  Tensor loss;     // (M, 1)
  Tensor divisor;  // 0-d
  Tensor valid;    // (M, 1) bool
};

RowLoss nll_rows(const Tensor& x, const Tensor& t, const Tensor& weight, int64_t ignore_index, const char* op) {
  const int64_t M = x.size(0), C = x.size(1);
  const int64_t n_valid = count_valid(t, C, ignore_index, op);
  Tensor valid = Tensor::empty({M, 1}, DType::Bool), idx = Tensor::empty({M, 1}, DType::Int64);
  for (int64_t i = 0; i < M; ++i) {
    const int64_t ti = t.data<int64_t>()[i];
    valid.data<bool>()[i] = ti != ignore_index;
    idx.data<int64_t>()[i] = ti != ignore_index ? ti : 0;
  }
  const Tensor zero = Tensor::zeros({}, x.dtype());
  const Tensor picked = where(valid, gather(x, 1, idx), zero);  // (M, 1)
  RowLoss r;
  r.valid = valid;
  if (!weight.defined()) {
    r.loss = neg(picked);
    r.divisor = Tensor::scalar(static_cast<double>(n_valid), x.dtype());
    return r;
  }
  kernels::check_same_dtype(x, weight, op);
  if (weight.dim() != 1 || weight.size(0) != C)
    throw std::invalid_argument(std::string(op) + ": weight must be (" + std::to_string(C) + "), got " + describe(weight));
  const Tensor w = where(valid, reshape(index_select(weight, 0, reshape(idx, {M})), {M, 1}), zero);  // (M, 1)
  r.loss = neg(mul(picked, w));
  r.divisor = sum(w);
  return r;
}

// Reduces per-row losses (M, 1): kNone to the target's shape, kMean divided by `divisor` (so
// 0/0 = nan when every row is ignored, as PyTorch).
Tensor reduce_rows(const Tensor& loss, const Tensor& divisor, Reduction reduction, const Shape& loss_shape) {
  switch (reduction) {
    case Reduction::None: return reshape(loss, loss_shape);
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return div(sum(loss), divisor);
  }
  throw std::invalid_argument("loss: unknown reduction");
}

// ---- the fused cross-entropy --------------------------------------------------------------------

// What the fused cross_entropy's backward needs.
struct CrossEntropySaved {
  Tensor t;  // (M) int64 targets
  int64_t ignore_index;
  Reduction reduction;
  double label_smoothing;
  int64_t n_valid;
  bool ignored(int64_t i) const { return t.data<int64_t>()[i] == ignore_index; }
  // Scale of row i's gradient per unit of g: 1/n_valid for kMean (0 when every row is ignored:
  // no row uses it), else 1.
  double mean_scale() const {
    return reduction == Reduction::Mean && n_valid > 0 ? 1.0 / static_cast<double>(n_valid) : 1.0;
  }
};

// The gradient of the fused cross_entropy with respect to its logits x (M, C), for the
// incoming gradient g (0-d, or (M) for kNone), as an op: its forward is the kernel below (from
// the softmax `probs` the forward kept), its backward is written with ops.
//   dx_i = s_i · (p_i − y_i) for a kept row, 0 for an ignored one; p_i = softmax(x_i),
//   y_i = (1 − ε)·onehot(t_i) + ε/C, s_i = g/n_valid (kMean), g (kSum) or g_i (kNone).
Tensor cross_entropy_backward(const Tensor& g, const Tensor& x, const Tensor& probs, const CrossEntropySaved& s) {
  AG_PROFILE_OP("cross_entropy_backward");
  const int64_t M = probs.size(0), C = probs.size(1);
  const Tensor G = kernels::dense(g);
  Tensor dx = Tensor::empty({M, C}, probs.dtype());
  const double eps = s.label_smoothing;
  AG_DISPATCH_FLOAT(probs.dtype(), "cross_entropy_backward", [&] {
    const scalar_t* pp = probs.data<scalar_t>();
    const scalar_t* pg = G.data<scalar_t>();
    scalar_t* pd = dx.data<scalar_t>();
    const int64_t* pt = s.t.data<int64_t>();
    const scalar_t uniform = static_cast<scalar_t>(eps / static_cast<double>(C)), hit = static_cast<scalar_t>(1.0 - eps);
    // kMean: the float32 training step's expression, unchanged: sc = (float)(g / n_valid)
    const scalar_t sc_all = s.reduction == Reduction::None
                                ? scalar_t(0)
                                : static_cast<scalar_t>(static_cast<double>(pg[0]) * s.mean_scale());
    for (int64_t i = 0; i < M; ++i) {
      const bool ignored = pt[i] == s.ignore_index;
      const scalar_t sc = s.reduction == Reduction::None ? pg[i] : sc_all;
      if (eps == 0.0) {
        for (int64_t j = 0; j < C; ++j) pd[i * C + j] = ignored ? scalar_t(0) : sc * pp[i * C + j];
        if (!ignored) pd[i * C + pt[i]] -= sc;
      } else {
        for (int64_t j = 0; j < C; ++j) pd[i * C + j] = ignored ? scalar_t(0) : sc * (pp[i * C + j] - uniform);
        if (!ignored) pd[i * C + pt[i]] -= sc * hit;
      }
    }
  });
  if (should_record({&g, &x})) {
    const bool gg = g.requires_grad(), gx = x.requires_grad();
    record(dx, "cross_entropy_backward", {g, x}, [sg = SavedTensor::save(g), sx = SavedTensor::save(x), s, M, C, gg,
                                                  gx](const Tensor& G) {
      // dx = s ⊙ keep ⊙ (softmax(x) − y)  =>
      //   dg = Σ_j G_ij keep_i (p_ij − y_ij)   (summed over the rows and scaled by 1/n_valid
      //        for kMean and kSum; per row for kNone)
      //   dx = p ⊙ (H − Σ_j H_j p_j) with H = s ⊙ keep ⊙ G   (softmax's backward of H)
      const Tensor g = sg.unpack(), x = sx.unpack();
      Tensor y = Tensor::zeros({M, C}, x.dtype()), keep = Tensor::zeros({M, 1}, x.dtype());  // constants
      AG_DISPATCH_FLOAT(x.dtype(), "cross_entropy_backward", [&] {
        for (int64_t i = 0; i < M; ++i) {
          if (s.ignored(i)) continue;
          keep.data<scalar_t>()[i] = 1;
          for (int64_t j = 0; j < C; ++j) y.data<scalar_t>()[i * C + j] = static_cast<scalar_t>(s.label_smoothing / C);
          y.data<scalar_t>()[i * C + s.t.data<int64_t>()[i]] += static_cast<scalar_t>(1.0 - s.label_smoothing);
        }
      });
      const Tensor p = softmax(x);  // (M, C), graph-connected to x
      const bool per_row = s.reduction == Reduction::None;
      Tensor dg, dxx;
      if (gg) {
        const Tensor d = mul(G, mul(sub(p, y), keep));  // (M, C)
        dg = per_row ? sum(d, {1}) : mul(sum(d), s.mean_scale());
      }
      if (gx) {
        const Tensor scale = per_row ? mul(reshape(g, {M, 1}), keep) : mul(keep, mul(g, s.mean_scale()));  // (M, 1)
        const Tensor h = mul(G, scale);
        dxx = mul(p, sub(h, sum(mul(h, p), {1}, /*keepdim=*/true)));
      }
      return Grads{dg, dxx};
    });
  }
  return dx;
}

// Fused cross-entropy of logits x (M, C) against class indices t (M), without weights:
// loss_i = log Σ_j exp(x_ij) − (1 − ε)·x_{i,t_i} − (ε/C)·Σ_j x_ij, 0 for ignored rows.
Tensor cross_entropy_fused(const Tensor& x, const Tensor& t, const CrossEntropyFuncOptions& o, const Shape& loss_shape) {
  AG_PROFILE_OP("cross_entropy");
  const int64_t M = x.size(0), C = x.size(1);
  CrossEntropySaved s{t, o.ignore_index, o.reduction, o.label_smoothing, count_valid(t, C, o.ignore_index, "cross_entropy")};
  const Tensor X = kernels::dense(x);
  const int64_t* pt = t.data<int64_t>();
  const double eps = o.label_smoothing;
  // Forward keeps the softmax probabilities for the backward: (M, C).
  Tensor probs = Tensor::empty({M, C}, x.dtype());
  Tensor rows = o.reduction == Reduction::None ? Tensor::empty({M}, x.dtype()) : Tensor();  // kNone: (M)
  // Rows in parallel, each loss kept, then summed in row order: the same total on any thread count.
  std::vector<double> losses(static_cast<size_t>(M));
  AG_DISPATCH_FLOAT(x.dtype(), "cross_entropy", [&] {
    const scalar_t* px = X.data<scalar_t>();
    scalar_t* pp = probs.data<scalar_t>();
    // an exp per value: a few dozen operations each, so a smaller grain than element-wise work
    const int64_t grain = std::max<int64_t>(1, kernels::kParallelGrain / 8 / std::max<int64_t>(C, 1));
    parallel::parallel_for(M, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const scalar_t* xr = px + i * C;
        scalar_t m = -std::numeric_limits<scalar_t>::infinity();
        for (int64_t j = 0; j < C; ++j) m = std::max(m, xr[j]);
        scalar_t* pr = pp + i * C;
        for (int64_t j = 0; j < C; ++j) pr[j] = kernels::exp_fast_nonpositive(xr[j] - m);  // vectorises
        double sum_exp = 0;
        for (int64_t j = 0; j < C; ++j) sum_exp += pr[j];
        const scalar_t inv = static_cast<scalar_t>(1.0 / sum_exp);
        for (int64_t j = 0; j < C; ++j) pr[j] *= inv;
        double loss = 0;
        if (pt[i] != o.ignore_index) {
          // loss_i = −log softmax(x)_t = log Σ exp(x − m) + m − x_t
          loss = std::log(sum_exp) + static_cast<double>(m) - static_cast<double>(xr[pt[i]]);
          if (eps != 0.0) {  // − ε·x_t + ε·x_t − (ε/C)·Σ_j x_j: the smoothed target's share
            double sum_x = 0;
            for (int64_t j = 0; j < C; ++j) sum_x += static_cast<double>(xr[j]);
            loss += eps * static_cast<double>(xr[pt[i]]) - eps / static_cast<double>(C) * sum_x;
          }
        }
        losses[static_cast<size_t>(i)] = loss;
      }
    });
    if (rows.defined())
      for (int64_t i = 0; i < M; ++i) rows.data<scalar_t>()[i] = static_cast<scalar_t>(losses[static_cast<size_t>(i)]);
  });
  double total = 0;
  for (const double loss : losses) total += loss;
  Tensor out;
  switch (o.reduction) {
    case Reduction::None: out = rows; break;
    case Reduction::Sum: out = Tensor::scalar(total, x.dtype()); break;
    case Reduction::Mean: out = Tensor::scalar(total / static_cast<double>(s.n_valid), x.dtype()); break;  // 0/0 = nan
  }
  if (should_record({&x})) {
    record(out, "cross_entropy", {x}, [probs, sx = SavedTensor::save(x), s](const Tensor& g) {
      // loss = Σ_i s_i·(−Σ_j y_ij log p_ij)  =>  dx = cross_entropy_backward (above)
      return Grads{cross_entropy_backward(g, sx.unpack(), probs, s)};
    });
  }
  return o.reduction == Reduction::None ? reshape(out, loss_shape) : out;
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  const Tensor d = sub(input, target);  // broadcast, as PyTorch (which warns)
  return reduce(mul(d, d), options.reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return reduce(abs(sub(input, target)), options.reduction);  // |0|' = 0, as PyTorch
}

// ATen's binary_cross_entropy reads input and target with their size-1 dims squeezed out, so an
// (N, 1) input takes an (N) target; the loss has the input's shape.
static Tensor bce_squeezed(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  Shape si, st;
  for (int64_t d : input.shape())
    if (d != 1) si.push_back(d);
  for (int64_t d : target.shape())
    if (d != 1) st.push_back(d);
  if (si != st)
    throw std::invalid_argument("binary_cross_entropy: target " + describe(target) + " does not match input " +
                                describe(input) + ", even with their size-1 dims squeezed");
  Tensor loss = reshape(binary_cross_entropy(reshape(input, si), reshape(target, si), {.reduction = kNone}), input.shape());
  if (options.weight.defined()) loss = mul(loss, options.weight);
  return reduce(loss, options.reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  AG_PROFILE_OP("binary_cross_entropy");
  kernels::check_float(input, "binary_cross_entropy");
  kernels::check_same_dtype(input, target, "binary_cross_entropy");
  if (input.shape() != target.shape()) return bce_squeezed(input, target, options);
  const Tensor x = kernels::dense(input), t = kernels::dense(target);
  Tensor loss = Tensor::empty(input.shape(), input.dtype());
  AG_DISPATCH_FLOAT(input.dtype(), "binary_cross_entropy", [&] {
    const scalar_t *px = x.data<scalar_t>(), *pt = t.data<scalar_t>();
    scalar_t* pl = loss.data<scalar_t>();
    for (int64_t i = 0, n = loss.numel(); i < n; ++i) {
      if (!(px[i] >= 0 && px[i] <= 1)) throw std::invalid_argument("all elements of input should be between 0 and 1");
      if (!(pt[i] >= 0 && pt[i] <= 1)) throw std::invalid_argument("all elements of target should be between 0 and 1");
      // torch's: (t − 1)·max(log(1 − x), −100) − t·max(log x, −100)
      const scalar_t lo = std::max<scalar_t>(std::log1p(-px[i]), scalar_t(-100)), li = std::max<scalar_t>(std::log(px[i]), scalar_t(-100));
      pl[i] = (pt[i] - 1) * lo - pt[i] * li;
    }
  });
  if (should_record({&input, &target})) {
    record(loss, "binary_cross_entropy", {input, target},
           [sx = SavedTensor::save(input), st = SavedTensor::save(target)](const Tensor& g) {
             // loss = −t·log x − (1 − t)·log(1 − x)  =>
             //   dx = g·(x − t) / max(x·(1 − x), ε)   (torch's formula, ε = float 1e-12)
             //   dt = −g·logit(x) = g·(log(1 − x) − log x)
             const Tensor x = sx.unpack(), t = st.unpack();
             // torch's 1e-12 is a float: the clamp is float(1e-12) in float64 too
             const Tensor dx = div(mul(g, sub(x, t)), clamp(mul(x, rsub(1.0, x)), static_cast<double>(1e-12f), std::nullopt));
             const Tensor dt = mul(g, sub(log(rsub(1.0, x)), log(x)));
             return Grads{dx, dt};
           });
  }
  if (options.weight.defined()) loss = mul(loss, options.weight);
  return reduce(loss, options.reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  kernels::check_same_dtype(input, target, "binary_cross_entropy_with_logits");
  if (input.shape() != target.shape())  // torch's message
    throw std::invalid_argument("Target size (" + shape_str(target.shape()) + ") must be the same as input size (" +
                                shape_str(input.shape()) + ")");
  // −log σ(x) = log(1 + e^−x) = m + log(e^−m + e^(−x−m)) with m = max(−x, 0): no overflow
  const Tensor m = relu(neg(input));
  const Tensor softplus_neg = add(m, log(add(exp(neg(m)), exp(sub(neg(input), m)))));  // −log σ(x)
  // loss = (1 − t)·x + (1 + (p − 1)·t)·(−log σ(x))   (p = pos_weight; without it, p = 1)
  const Tensor log_weight = options.pos_weight.defined() ? add(mul(add(options.pos_weight, -1.0), target), 1.0) : Tensor();
  Tensor loss = add(mul(rsub(1.0, target), input), log_weight.defined() ? mul(log_weight, softplus_neg) : softplus_neg);
  if (options.weight.defined()) loss = mul(loss, options.weight);
  return reduce(loss, options.reduction);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  const Rows r = to_rows(input, target, "nll_loss");
  const RowLoss l = nll_rows(r.x, r.t, options.weight, options.ignore_index, "nll_loss");
  return reduce_rows(l.loss, l.divisor, options.reduction, r.loss_shape);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  const double eps = options.label_smoothing;
  if (!(eps >= 0.0 && eps <= 1.0))
    throw std::invalid_argument("cross_entropy: label_smoothing must be between 0.0 and 1.0, got " + std::to_string(eps));
  kernels::check_float(input, "cross_entropy");
  if (target.defined() && is_floating(target.dtype())) {
    // Class probabilities y shaped like the input: loss = −Σ_c w_c·y_c·log p_c over the class
    // dim, y smoothed to (1 − ε)·y + ε/C; kMean divides by the number of rows (N·d1·...).
    kernels::check_same_dtype(input, target, "cross_entropy");
    if (input.dim() == 0 || target.shape() != input.shape())
      throw std::invalid_argument("cross_entropy: class-probability target " + describe(target) +
                                  " must have the input's shape " + describe(input));
    if (options.ignore_index >= 0)
      throw std::invalid_argument("cross_entropy: ignore_index is only for class-index targets (int64), not " +
                                  describe(target));
    const int64_t cd = input.dim() == 1 ? 0 : 1, C = input.size(cd);
    Tensor y = eps > 0 ? add(mul(target, 1.0 - eps), eps / static_cast<double>(C)) : target;
    if (options.weight.defined()) {
      kernels::check_same_dtype(input, options.weight, "cross_entropy");
      if (options.weight.dim() != 1 || options.weight.size(0) != C)
        throw std::invalid_argument("cross_entropy: weight must be (" + std::to_string(C) + "), got " + describe(options.weight));
      Shape ws(static_cast<size_t>(input.dim()), 1);  // (C, 1, ...) along the class dim
      ws[cd] = C;
      y = mul(y, reshape(options.weight, ws));
    }
    return reduce(neg(sum(mul(log_softmax(input, cd), y), {cd})), options.reduction);
  }
  const Rows r = to_rows(input, target, "cross_entropy");
  if (!options.weight.defined()) return cross_entropy_fused(r.x, r.t, options, r.loss_shape);
  // Class weights: composed of ops, as PyTorch's: (1 − ε)·nll + ε/C·smooth, where
  // smooth_i = −Σ_c w_c·log p_ic (0 for an ignored row) and kMean divides both by Σ w[t_i].
  const Tensor logp = log_softmax(r.x, 1);  // (M, C)
  const RowLoss l = nll_rows(logp, r.t, options.weight, options.ignore_index, "cross_entropy");
  Tensor loss = l.loss;  // (M, 1)
  if (eps > 0) {
    const Tensor smooth = neg(sum(mul(logp, options.weight), {1}, /*keepdim=*/true));  // (M, 1)
    const Tensor kept = where(l.valid, smooth, Tensor::zeros({}, logp.dtype()));
    const int64_t C = r.x.size(1);
    loss = add(mul(loss, 1.0 - eps), mul(kept, eps / static_cast<double>(C)));
  }
  return reduce_rows(loss, l.divisor, options.reduction, r.loss_shape);
}

}  // namespace ag
