// The reference's tensor, its backward walk, and matmul (tensor.h says what to read next).
#include "reference/tensor.h"

#include <stdexcept>
#include <string>
#include <unordered_set>

namespace ag::ref {

namespace {
std::string str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}
}  // namespace

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor tensor(Shape shape, std::vector<double> data, bool requires_grad) {
  if (static_cast<int64_t>(data.size()) != numel(shape))
    throw std::invalid_argument("reference tensor: " + std::to_string(data.size()) + " values for shape " + str(shape));
  auto t = std::make_shared<TensorNode>();
  t->shape = std::move(shape);
  t->data = std::move(data);
  t->requires_grad = requires_grad;
  return t;
}

Tensor zeros(Shape shape) {
  const int64_t n = numel(shape);
  return tensor(std::move(shape), std::vector<double>(static_cast<size_t>(n), 0.0));
}

Tensor op_output(const char* op, Shape shape, std::vector<double> data, std::vector<Tensor> inputs, BackwardFn backward) {
  Tensor out = tensor(std::move(shape), std::move(data));
  for (const Tensor& in : inputs) out->requires_grad = out->requires_grad || (in && in->requires_grad);
  if (!out->requires_grad) return out;  // nothing to differentiate: forget the inputs
  out->op = op;
  out->inputs = std::move(inputs);
  out->backward = std::move(backward);
  return out;
}

// ---- broadcasting ----------------------------------------------------------------------------

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {  // i counts dims from the right
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1, db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("reference: shapes " + str(a) + " and " + str(b) + " do not broadcast");
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

int64_t broadcast_index(const Shape& shape, const Shape& to, int64_t i) {
  // Peel i's coordinates off from the last dim; a stretched dim (size 1) reads coordinate 0.
  int64_t index = 0, stride = 1;
  for (size_t d = 0; d < to.size(); ++d) {
    const int64_t coord = i % to[to.size() - 1 - d];
    i /= to[to.size() - 1 - d];
    if (d < shape.size()) {
      const int64_t size = shape[shape.size() - 1 - d];
      index += (size == 1 ? 0 : coord) * stride;
      stride *= size;
    }
  }
  return index;
}

// out = g summed over broadcast dims: each element of g adds into the element it was read from.
Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g->shape == shape) return g;
  if (broadcast_shape(shape, g->shape) != g->shape)
    throw std::logic_error("reference: a gradient " + str(g->shape) + " for an input of shape " + str(shape));
  Tensor out = zeros(shape);
  for (int64_t i = 0; i < numel(g->shape); ++i) out->data[broadcast_index(shape, g->shape, i)] += g->data[i];
  return out;
}

// ---- the walk --------------------------------------------------------------------------------
//
// The chain rule, applied backwards through the graph the ops recorded:
//   1. order the tensors so that each comes after every tensor it was computed from;
//   2. the root's gradient is the seed (1 for a scalar loss);
//   3. from the root backwards, each op output's gradient is complete when it is reached (every
//      tensor computed from it came later in the order and has passed its gradient on), so its
//      backward turns it into its inputs' gradients;
//   4. each input adds the gradient it gets to its own, summed to its shape where the forward
//      broadcast it: an input used twice gets the sum of both uses.

void backward(const Tensor& root, const Tensor& seed) {
  std::vector<TensorNode*> order;  // 1. depth first: a tensor goes in after all of its inputs
  std::unordered_set<TensorNode*> seen;
  std::function<void(TensorNode*)> visit = [&](TensorNode* t) {
    if (!seen.insert(t).second) return;
    for (const Tensor& in : t->inputs)
      if (in && in->requires_grad) visit(in.get());
    order.push_back(t);
  };
  visit(root.get());
  for (TensorNode* t : order)
    if (t->backward || t->grad.size() != t->data.size()) t->grad.assign(t->data.size(), 0.0);

  if (seed && seed->shape != root->shape)  // 2.
    throw std::invalid_argument("reference backward: seed " + str(seed->shape) + " for a root " + str(root->shape));
  if (!seed && root->data.size() != 1) throw std::invalid_argument("reference backward: a root that is not a scalar needs a seed");
  root->grad = seed ? seed->data : std::vector<double>{1.0};

  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // 3.
    const TensorNode& t = **it;
    if (!t.backward) continue;  // a leaf
    const Grads grads = t.backward(t);
    for (size_t i = 0; i < grads.size(); ++i) {  // 4.
      const Tensor& in = t.inputs[i];
      if (!grads[i] || !in || !in->requires_grad) continue;
      const Tensor g = sum_to(grads[i], in->shape);
      for (size_t j = 0; j < g->data.size(); ++j) in->grad[j] += g->data[j];
    }
  }
}

// ---- matmul ----------------------------------------------------------------------------------
//   c = a·b          c[i,j]  = Σ_k a[i,k]·b[k,j]     a (..., M, K), b (..., K, N) or (K, N), c (..., M, N)
//   backward:        da = g·bᵀ    da[i,k] = Σ_j g[i,j]·b[k,j]
//                    db = aᵀ·g    db[k,j] = Σ_i a[i,k]·g[i,j]
// per entry of the leading dims; a b (K, N) shared by all of them gets db (..., K, N), which the
// walk sums over them.

Tensor matmul(const Tensor& a, const Tensor& b) {
  const size_t r = a->shape.size();
  const bool shared_b = b->shape.size() == 2;
  if (r < 2 || b->shape.size() < 2 || a->shape[r - 1] != b->shape[b->shape.size() - 2] ||
      (!shared_b && Shape(a->shape.begin(), a->shape.end() - 2) != Shape(b->shape.begin(), b->shape.end() - 2)))
    throw std::invalid_argument("reference matmul: cannot multiply " + str(a->shape) + " by " + str(b->shape));
  const int64_t M = a->shape[r - 2], K = a->shape[r - 1], N = b->shape.back(), batch = numel(a->shape) / (M * K);
  Shape shape = a->shape;
  shape.back() = N;
  std::vector<double> c(static_cast<size_t>(batch * M * N), 0.0);
  const double* A = a->data.data();
  for (int64_t n = 0; n < batch; ++n) {
    const double* B = b->data.data() + (shared_b ? 0 : n * K * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += A[(n * M + i) * K + k] * B[k * N + j];
        c[(n * M + i) * N + j] = s;
      }
  }
  return op_output("matmul", shape, std::move(c), {a, b}, [M, K, N, batch, shared_b](const TensorNode& out) {
    const TensorNode &a = *out.inputs[0], &b = *out.inputs[1];
    Shape db_shape = a.shape;  // (..., K, N): b's shape as broadcast over the leading dims
    db_shape[db_shape.size() - 2] = K, db_shape.back() = N;
    Tensor da = zeros(a.shape), db = zeros(db_shape);
    const double* g = out.grad.data();
    for (int64_t n = 0; n < batch; ++n) {
      const double* B = b.data.data() + (shared_b ? 0 : n * K * N);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k) {
            da->data[(n * M + i) * K + k] += g[(n * M + i) * N + j] * B[k * N + j];  // da = g·bᵀ
            db->data[(n * K + k) * N + j] += a.data[(n * M + i) * K + k] * g[(n * M + i) * N + j];  // db = aᵀ·g
          }
    }
    return Grads{da, db};
  });
}

}  // namespace ag::ref
