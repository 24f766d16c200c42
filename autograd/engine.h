// The reverse-mode engine: graph nodes, the no-grad switch, and backward().
//
// Ownership (no reference cycles, so the graph frees itself):
//   output TensorImpl --grad_fn--> Node --next--> input Nodes (or input leaf TensorImpls)
// A node never points back at its own output. When a backward function needs the output's
// values (exp, tanh, softmax...) it captures a detached handle: same storage, no grad_fn.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

// Gradients of one node's inputs, in the order of its inputs; an undefined Tensor means
// "no gradient for this input".
using Grads = std::vector<Tensor>;
using BackwardFn = std::function<Grads(const Tensor& grad_output)>;

// Where a gradient flows next: the node that produced an input, or the input leaf itself.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  bool active() const { return node || leaf; }
};

struct Node {
  Node(std::string op_name, Shape out_shape, DType out_dtype);
  ~Node();  // iterative, so that freeing a very long chain cannot overflow the stack
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::string op;       // "matmul", "softmax", ...
  Shape out_shape;      // shape of the tensor this node produced
  DType out_dtype;
  std::vector<Edge> next;  // one per input
  BackwardFn backward;     // null once the graph has been freed
  Tensor grad;             // gradient of the output, accumulated during one backward pass
  double grad_norm = -1;   // L2 norm of that gradient after a retain_graph backward (-1: none)

  static int64_t live_count();  // nodes alive in this process, for leak tests
};

// Is the engine recording? Off inside NoGradGuard and while running backward functions.
struct GradMode {
  static bool enabled();
  static void set_enabled(bool on);
};

// RAII: nothing is recorded while it lives (inference must not grow memory).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// True when grad mode is on and at least one input requires grad.
bool should_record(std::initializer_list<const Tensor*> inputs);
bool should_record(const std::vector<Tensor>& inputs);

// Attaches a node to `out` (which must be freshly produced by the op) with edges to `inputs`.
// Call only when should_record(...) is true. Returns out for convenience.
Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward);

// Backpropagates `grad_output` (shaped like `root`) through the graph that made `root`, in
// reverse topological order, visiting each node once. Frees the graph unless retain_graph.
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

// The nodes reachable from root, in topological order (root first); for graph export.
std::vector<Node*> topological_order(const Node* root);

}  // namespace ag
