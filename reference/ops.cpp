// The reference's ops: each section states its forward and backward, then computes them in
// plain loops. A backward gets its op's output node (its grad g, its data y and its inputs) and
// returns its inputs' gradients (tensor.h).
#include "reference/ops.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace ag::ref {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// A tensor's last dim C, and how many rows of C it holds.
int64_t last(const TensorNode& t) { return t.shape.empty() ? 1 : t.shape.back(); }
int64_t rows(const TensorNode& t) { return last(t) ? numel(t.shape) / last(t) : 0; }
}  // namespace

// ---- add -------------------------------------------------------------------------------------
//   c = a + b        broadcast together (tensor.h): c[i] = a[i's element of a] + b[i's element of b]
//   backward:        da = g,  db = g     in c's shape; the walk sums each to its input's shape

Tensor add(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shape(a->shape, b->shape);
  std::vector<double> c(static_cast<size_t>(numel(shape)));
  for (int64_t i = 0; i < numel(shape); ++i)
    c[i] = a->data[broadcast_index(a->shape, shape, i)] + b->data[broadcast_index(b->shape, shape, i)];
  return op_output("add", shape, std::move(c), {a, b}, [](const TensorNode& out) {
    const Tensor g = tensor(out.shape, out.grad);
    return Grads{g, g};
  });
}

// ---- scale -----------------------------------------------------------------------------------
//   y = s·a          backward: da = s·g

Tensor scale(const Tensor& a, double s) {
  std::vector<double> y = a->data;
  for (double& v : y) v *= s;
  return op_output("scale", a->shape, std::move(y), {a}, [s](const TensorNode& out) {
    std::vector<double> da = out.grad;
    for (double& v : da) v *= s;  // da = s·g
    return Grads{tensor(out.shape, std::move(da))};
  });
}

// ---- transpose -------------------------------------------------------------------------------
//   y[..., i, ..., j, ...] = a[..., j, ..., i, ...]   (dims d0 and d1 swapped; a copy)
//   backward:        da = g with the same two dims swapped back

Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) {
  const auto r = static_cast<int64_t>(a->shape.size());
  if (d0 < 0) d0 += r;
  if (d1 < 0) d1 += r;
  if (d0 < 0 || d1 < 0 || d0 >= r || d1 >= r) throw std::invalid_argument("reference transpose: dims out of range");
  Shape shape = a->shape;
  std::swap(shape[d0], shape[d1]);
  std::vector<int64_t> stride(r, 1);  // a's strides, read in y's order of dims
  for (int64_t d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * a->shape[d + 1];
  std::swap(stride[d0], stride[d1]);
  std::vector<double> y(a->data.size());
  for (int64_t i = 0; i < numel(shape); ++i) {
    int64_t rest = i, from = 0;
    for (int64_t d = r - 1; d >= 0; --d) from += (rest % shape[d]) * stride[d], rest /= shape[d];
    y[i] = a->data[from];
  }
  return op_output("transpose", shape, std::move(y), {a}, [d0, d1](const TensorNode& out) {
    return Grads{transpose(tensor(out.shape, out.grad), d0, d1)};  // da = g with the two dims swapped back
  });
}

// ---- reshape ---------------------------------------------------------------------------------
//   y = a, read in another shape (the same row-major values)        backward: da = g, in a's shape

Tensor reshape(const Tensor& a, Shape shape) {
  if (numel(shape) != numel(a->shape)) throw std::invalid_argument("reference reshape: the element counts differ");
  return op_output("reshape", std::move(shape), a->data, {a}, [](const TensorNode& out) {
    return Grads{tensor(out.inputs[0]->shape, out.grad)};
  });
}

// ---- narrow ----------------------------------------------------------------------------------
//   y[..., c] = a[..., start + c]    for c < size, along the last dim
//   backward:        da[..., start + c] = g[..., c], and 0 in the columns y did not take

Tensor narrow(const Tensor& a, int64_t start, int64_t size) {
  const int64_t C = last(*a), R = rows(*a);
  if (start < 0 || size < 0 || start + size > C) throw std::invalid_argument("reference narrow: columns out of range");
  Shape shape = a->shape;
  shape.back() = size;
  std::vector<double> y(static_cast<size_t>(R * size));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < size; ++c) y[r * size + c] = a->data[r * C + start + c];
  return op_output("narrow", shape, std::move(y), {a}, [start, size, C, R](const TensorNode& out) {
    Tensor da = zeros(out.inputs[0]->shape);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < size; ++c) da->data[r * C + start + c] = out.grad[r * size + c];
    return Grads{da};
  });
}

// ---- linear ----------------------------------------------------------------------------------
//   y = x·wᵀ + b     made of transpose, matmul and add: their backwards give dx, dw and db

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor y = matmul(x, transpose(w, 0, 1));  // (..., in)·(in, out)
  return b ? add(y, b) : y;
}

// ---- gelu ------------------------------------------------------------------------------------
//   y = x·Φ(x)               Φ(x) = (1 + erf(x/√2))/2, the standard normal's CDF
//   backward:  dx = g·(Φ(x) + x·φ(x)),  φ(x) = exp(−x²/2)/√(2π), its density

Tensor gelu(const Tensor& a) {
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  std::vector<double> y(a->data.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = a->data[i] * Phi(a->data[i]);
  return op_output("gelu", a->shape, std::move(y), {a}, [Phi](const TensorNode& out) {
    const std::vector<double>& x = out.inputs[0]->data;
    std::vector<double> dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double phi = std::exp(-0.5 * x[i] * x[i]) / std::sqrt(2 * std::numbers::pi);
      dx[i] = out.grad[i] * (Phi(x[i]) + x[i] * phi);
    }
    return Grads{tensor(out.shape, std::move(dx))};
  });
}

// ---- masked_fill -----------------------------------------------------------------------------
//   y = −∞ where hidden, else a        (hidden: 0 or 1, broadcast to a's shape)
//   backward:        da = g where not hidden, else 0 (a hidden score has no effect)

Tensor masked_fill(const Tensor& a, const Tensor& hidden) {
  if (broadcast_shape(hidden->shape, a->shape) != a->shape)
    throw std::invalid_argument("reference masked_fill: the mask does not broadcast to the tensor");
  std::vector<double> y = a->data;
  for (int64_t i = 0; i < numel(a->shape); ++i)
    if (hidden->data[broadcast_index(hidden->shape, a->shape, i)] != 0) y[i] = -kInf;
  return op_output("masked_fill", a->shape, std::move(y), {a, hidden}, [](const TensorNode& out) {
    const TensorNode& hidden = *out.inputs[1];
    std::vector<double> da = out.grad;
    for (int64_t i = 0; i < numel(out.shape); ++i)
      if (hidden.data[broadcast_index(hidden.shape, out.shape, i)] != 0) da[i] = 0;  // no gradient where hidden
    return Grads{tensor(out.shape, std::move(da)), nullptr};
  });
}

// ---- softmax ---------------------------------------------------------------------------------
//   y_j = exp(x_j − m) / Σ_k exp(x_k − m)    over the last dim, m = max_k x_k (the same y, and
//                                             no exp overflows)
//   backward:  dx_j = y_j·(g_j − Σ_k g_k·y_k)
// A row that is all −∞ (a query that may see no key) gets y = 0, and so dx = 0: attograd's rule,
// where PyTorch gives NaN.

Tensor softmax(const Tensor& a) {
  const int64_t C = last(*a);
  std::vector<double> y(a->data.size(), 0.0);
  for (int64_t r = 0; r < rows(*a); ++r) {
    const double* x = &a->data[r * C];
    double m = -kInf, z = 0;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, x[j]);
    if (m == -kInf) continue;  // all hidden: zeros
    for (int64_t j = 0; j < C; ++j) z += y[r * C + j] = std::exp(x[j] - m);
    for (int64_t j = 0; j < C; ++j) y[r * C + j] /= z;
  }
  return op_output("softmax", a->shape, std::move(y), {a}, [C](const TensorNode& out) {
    std::vector<double> dx(out.data.size());
    for (int64_t r = 0; r < rows(out); ++r) {
      const double *y = &out.data[r * C], *g = &out.grad[r * C];
      double gy = 0;  // Σ_k g_k·y_k
      for (int64_t k = 0; k < C; ++k) gy += g[k] * y[k];
      for (int64_t j = 0; j < C; ++j) dx[r * C + j] = y[j] * (g[j] - gy);  // dx_j = y_j·(g_j − Σ_k g_k·y_k)
    }
    return Grads{tensor(out.shape, std::move(dx))};
  });
}

// ---- layer_norm ------------------------------------------------------------------------------
//   per row x of the last dim (C values):
//   μ = Σ x/C,  σ² = Σ (x − μ)²/C,  r = 1/√(σ² + eps),  x̂ = (x − μ)·r,  y = x̂⊙w + b
//   backward:  dx̂ = g⊙w,  dx = r·(dx̂ − mean(dx̂) − x̂·mean(dx̂⊙x̂))
//              dw = g⊙x̂,  db = g     per row: the walk sums them over the rows to w's and b's (C)

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const int64_t C = last(*x), R = rows(*x);
  if (w->shape != Shape{C} || b->shape != Shape{C}) throw std::invalid_argument("reference layer_norm: w and b must be (C)");
  std::vector<double> xhat(x->data.size()), r(static_cast<size_t>(R)), y(x->data.size());
  for (int64_t i = 0; i < R; ++i) {
    const double* row = &x->data[i * C];
    double mu = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mu += row[c] / C;
    for (int64_t c = 0; c < C; ++c) var += (row[c] - mu) * (row[c] - mu) / C;
    r[i] = 1 / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c) {
      xhat[i * C + c] = (row[c] - mu) * r[i];
      y[i * C + c] = xhat[i * C + c] * w->data[c] + b->data[c];
    }
  }
  return op_output("layer_norm", x->shape, std::move(y), {x, w, b}, [xhat, r, C, R](const TensorNode& out) {
    const std::vector<double>& w = out.inputs[1]->data;
    Tensor dx = zeros(out.shape), dw = zeros(out.shape), db = tensor(out.shape, out.grad);
    for (int64_t i = 0; i < R; ++i) {
      double mean_dxhat = 0, mean_dxhat_xhat = 0;
      for (int64_t c = 0; c < C; ++c) {
        const double dxhat = out.grad[i * C + c] * w[c];
        mean_dxhat += dxhat / C;
        mean_dxhat_xhat += dxhat * xhat[i * C + c] / C;
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t at = i * C + c;
        dx->data[at] = r[i] * (out.grad[at] * w[c] - mean_dxhat - xhat[at] * mean_dxhat_xhat);
        dw->data[at] = out.grad[at] * xhat[at];
      }
    }
    return Grads{dx, dw, db};
  });
}

// ---- embedding -------------------------------------------------------------------------------
//   y[..., :] = table[id, :]                   for the id at each position (ids: whole numbers)
//   backward:  dtable[id, :] += g[..., :]      for every position that holds id

Tensor embedding(const Tensor& ids, const Tensor& table) {
  const int64_t V = table->shape[0], E = table->shape[1], n = numel(ids->shape);
  Shape shape = ids->shape;
  shape.push_back(E);
  std::vector<double> y(static_cast<size_t>(n * E));
  for (int64_t p = 0; p < n; ++p) {
    const auto id = static_cast<int64_t>(ids->data[p]);
    if (id < 0 || id >= V) throw std::invalid_argument("reference embedding: id " + std::to_string(id) + " out of range");
    for (int64_t e = 0; e < E; ++e) y[p * E + e] = table->data[id * E + e];
  }
  return op_output("embedding", shape, std::move(y), {ids, table}, [n, E](const TensorNode& out) {
    Tensor dtable = zeros(out.inputs[1]->shape);
    for (int64_t p = 0; p < n; ++p) {
      const auto id = static_cast<int64_t>(out.inputs[0]->data[p]);
      for (int64_t e = 0; e < E; ++e) dtable->data[id * E + e] += out.grad[p * E + e];
    }
    return Grads{nullptr, dtable};
  });
}

// ---- cross_entropy ---------------------------------------------------------------------------
//   loss = (1/N)·Σ_n (lse_n − x[n, t_n]),  lse_n = log Σ_v exp(x[n,v])     logits x (N, V), targets t (N)
//   backward:  dx[n, v] = g·(exp(x[n,v] − lse_n) − [v = t_n]) / N          (softmax minus one-hot)
// lse_n is computed as m + log Σ_v exp(x[n,v] − m), m = max_v x[n,v], so that no exp overflows.

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  if (logits->shape.size() != 2 || targets->shape != Shape{logits->shape[0]})
    throw std::invalid_argument("reference cross_entropy: logits (N, V) and targets (N)");
  const int64_t N = logits->shape[0], V = logits->shape[1];
  std::vector<double> lse(static_cast<size_t>(N));
  double loss = 0;
  for (int64_t n = 0; n < N; ++n) {
    const double* x = &logits->data[n * V];
    const auto t = static_cast<int64_t>(targets->data[n]);
    if (t < 0 || t >= V) throw std::invalid_argument("reference cross_entropy: target " + std::to_string(t) + " out of range");
    double m = -kInf, z = 0;
    for (int64_t v = 0; v < V; ++v) m = std::max(m, x[v]);
    for (int64_t v = 0; v < V; ++v) z += std::exp(x[v] - m);
    lse[n] = m + std::log(z);
    loss += (lse[n] - x[t]) / N;
  }
  return op_output("cross_entropy", {}, {loss}, {logits, targets}, [lse, N, V](const TensorNode& out) {
    const TensorNode &x = *out.inputs[0], &t = *out.inputs[1];
    Tensor dx = zeros(x.shape);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t v = 0; v < V; ++v) {
        const double onehot = v == static_cast<int64_t>(t.data[n]) ? 1 : 0;
        dx->data[n * V + v] = out.grad[0] * (std::exp(x.data[n * V + v] - lse[n]) - onehot) / N;
      }
    return Grads{dx, nullptr};
  });
}

// ---- attention -------------------------------------------------------------------------------
//   scores  = q·kᵀ/√d (+ mask)               (..., L, S)
//   weights = softmax(scores, −∞ where hidden)
//   output  = weights·v                      (..., L, dv)
// made of the ops above, so its backward is theirs, in reverse:
//   dweights = g·vᵀ,  dv = weightsᵀ·g                       (matmul)
//   dscores  = weights ⊙ (dweights − Σ_j dweights_j·weights_j), 0 where hidden   (softmax, masked_fill)
//   dq = dscores·k/√d,  dk = dscoresᵀ·q/√d,  dmask = dscores   (matmul, scale, add)

Attention attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& hidden, const Tensor& mask) {
  Attention a;
  const double d = static_cast<double>(q->shape.back());
  a.scores = scale(matmul(q, transpose(k, -2, -1)), 1 / std::sqrt(d));
  if (mask) a.scores = add(a.scores, mask);
  a.weights = softmax(hidden ? masked_fill(a.scores, hidden) : a.scores);
  a.output = matmul(a.weights, v);
  return a;
}

Tensor causal_mask(int64_t L, int64_t S) {
  Tensor hidden = zeros({L, S});
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = i + 1; j < S; ++j) hidden->data[i * S + j] = 1;
  return hidden;
}

}  // namespace ag::ref
