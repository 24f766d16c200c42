// attograd's reference core: reverse-mode autograd and the character GPT in plain loops.
//
// Read this folder first (docs/studying.md). It computes what the fast library (autograd/, nn/,
// models/) computes, the slow and obvious way: float64 only, one thread, every tensor a
// contiguous row-major array, every op a loop under the formula it computes. No BLAS, no
// views, no hooks, no profiler. The order to read it in:
//   tensor.h, tensor.cpp  the tensor, the backward walk, and matmul with its backward
//   ops.h, ops.cpp        the other ops, each forward and backward side by side
//   gpt.h, gpt.cpp        the character GPT, top to bottom, like nanoGPT's model.py
// The tests hold the fast library equal to this one (tests/reference/test_reference_agreement.cpp), and
// a test holds this folder to its line budget (tests/reference/test_reference_core.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ag::ref {

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& shape);  // the product of the dims (1 for a 0-d shape)

struct TensorNode;
// A tensor is a shared handle, as in PyTorch: ops keep their inputs alive through it. Null is
// "no tensor" (an input an op does without).
using Tensor = std::shared_ptr<TensorNode>;
// What an op's backward returns: dLoss/d(each input), in the order of out.inputs; null where
// an input gets none. A gradient may come in the shape the forward broadcast its input to: the
// walk sums it back down (sum_to).
using Grads = std::vector<Tensor>;
using BackwardFn = std::function<Grads(const TensorNode& out)>;

struct TensorNode {
  Shape shape;
  std::vector<double> data;  // the values, row-major: element (i, j) of a (R, C) tensor is data[i·C + j]
  std::vector<double> grad;  // dLoss/d(data), after backward(); empty before
  bool requires_grad = false;
  // Set when an op made this tensor (empty for a leaf: an input or a parameter):
  const char* op = "";
  std::vector<Tensor> inputs;  // the op's inputs
  BackwardFn backward;         // reads this node's grad (and data, inputs); returns the inputs' grads
};

// A leaf: given values, or zeros. requires_grad asks backward() to fill its grad.
Tensor tensor(Shape shape, std::vector<double> data, bool requires_grad = false);
Tensor zeros(Shape shape);
// An op's output: its values, and its backward when an input requires grad (else a plain tensor).
Tensor op_output(const char* op, Shape shape, std::vector<double> data, std::vector<Tensor> inputs, BackwardFn backward);

// Broadcasting, as NumPy and PyTorch: shapes are aligned on the right, and a dim of 1 (or a
// missing one) stretches to the other's size. broadcast_shape throws when they cannot.
Shape broadcast_shape(const Shape& a, const Shape& b);
// The flat index into a tensor of `shape` that element `i` of the broadcast shape `to` reads.
int64_t broadcast_index(const Shape& shape, const Shape& to, int64_t i);
// g (shaped `to`) summed over the dims that were broadcast to make `shape`: the backward of
// broadcasting, which the walk applies to every gradient an op returns.
Tensor sum_to(const Tensor& g, const Shape& shape);

// dLoss/dt into t->grad for every tensor t that `root` depends on and that requires grad.
// `root` is the loss (its gradient is 1), or any tensor with `seed` its given gradient.
// Leaves add to the grad they have (zero it between steps); the op outputs' grads start at zero.
void backward(const Tensor& root, const Tensor& seed = nullptr);

// c = a·b for a (..., M, K) and b (..., K, N) with the same leading dims, or b (K, N) for all.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace ag::ref
