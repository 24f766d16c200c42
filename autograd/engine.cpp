#include "autograd/engine.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "autograd/kernels/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"

namespace ag {

namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local bool g_grad_enabled = true;
}  // namespace

Node::Node(std::string op_name, Shape shape, DType dtype)
    : op(std::move(op_name)), out_shape(std::move(shape)), out_dtype(dtype) {
  ++g_live_nodes;
}

Node::~Node() {
  // Destroying a node drops its inputs' nodes, which may drop theirs, and so on: a chain of a
  // million ops would recurse a million deep. Instead, take ownership of the input nodes
  // here and release the ones we hold last, one by one, from a local stack.
  std::vector<std::shared_ptr<Node>> pending;
  auto steal_inputs = [&pending](Node& n) {
    std::vector<std::shared_ptr<Node>> inputs;
    for (auto& e : n.next)
      if (e.node) inputs.push_back(std::move(e.node));
    n.next.clear();
    n.backward = nullptr;  // releases saved tensors, which may also hold input nodes
    for (auto& in : inputs)
      if (in.use_count() == 1) pending.push_back(std::move(in));
  };
  steal_inputs(*this);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    steal_inputs(*n);
  }  // n is freed here with no inputs left to recurse into
  --g_live_nodes;
}

int64_t Node::live_count() { return g_live_nodes.load(); }

bool GradMode::enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool on) { g_grad_enabled = on; }

bool should_record(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>(op, out.shape(), out.dtype());
  node->next.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    Edge e;
    if (in.defined() && in.requires_grad()) {
      if (in.grad_fn()) e.node = in.grad_fn();
      else e.leaf = in.impl_ptr();
    }
    node->next.push_back(std::move(e));
  }
  node->backward = std::move(backward);
  out.impl().grad_fn = std::move(node);
  out.impl().requires_grad = true;
  return out;
}

std::vector<Node*> topological_order(const Node* root) {
  // Iterative depth-first search; post-order reversed is a topological order in which every
  // node comes before the nodes of its inputs.
  std::vector<Node*> post;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack;
  Node* r = const_cast<Node*>(root);
  stack.push_back({r, 0});
  seen.insert(r);
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->next.size()) {
      Node* child = n->next[i++].node.get();
      if (child && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      post.push_back(n);
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

static double l2_norm(const Tensor& g) {
  double s = 0;
  for (double v : g.to_double_vector()) s += v * v;
  return std::sqrt(s);
}

// acc += g in place. Only for an accumulator nobody else can see: its handle and its storage
// are held by the engine alone (so no view or user handle observes the change).
static bool add_in_place(Tensor& acc, const Tensor& g) {
  if (acc.impl_ptr().use_count() != 1 || acc.impl().storage.use_count() != 1 || !acc.is_contiguous() ||
      acc.dtype() != g.dtype() || acc.shape() != g.shape())
    return false;
  const Tensor gd = g.is_contiguous() ? g : g.contiguous();
  AG_DISPATCH_FLOAT(acc.dtype(), "accumulate", [&] {
    scalar_t* a = acc.data<scalar_t>();
    const scalar_t* b = gd.data<scalar_t>();
    parallel::parallel_for(acc.numel(), 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] += b[i];
    });
  });
  return true;
}

// Adds g into a leaf's .grad. The first gradient is stored as its own contiguous copy, so a
// later in-place accumulation can never write into a tensor that someone else still holds.
static void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  if (!leaf.grad) {
    leaf.grad = g.to(leaf.dtype).clone().impl_ptr();
    return;
  }
  Tensor acc(std::move(leaf.grad));  // moved out: a user's handle is then the only other owner
  const Tensor gl = g.to(leaf.dtype);
  if (!add_in_place(acc, gl)) acc = add(acc, gl);
  leaf.grad = acc.impl_ptr();
}

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  if (!root.requires_grad())
    throw std::invalid_argument("backward: tensor " + describe(root) +
                                " does not require grad (no input of the ops that made it requires grad)");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument("backward: grad can be implicitly created only for one-element tensors, got " +
                                  describe(root) + "; pass an explicit gradient");
    seed = Tensor::ones(root.shape(), root.dtype());
  } else if (seed.shape() != root.shape()) {
    throw std::invalid_argument("backward: gradient " + describe(seed) + " does not match tensor " + describe(root));
  }

  NoGradGuard no_grad;  // backward functions use ops, but build no graph
  if (root.is_leaf()) {
    accumulate_leaf(root.impl(), seed);
    return;
  }
  Node* root_node = root.grad_fn().get();
  const std::vector<Node*> order = topological_order(root_node);
  root_node->grad = seed.to(root_node->out_dtype);

  for (Node* node : order) {
    if (!node->grad.defined()) continue;  // no gradient reached this node
    Tensor g = std::move(node->grad);
    node->grad = Tensor();
    if (retain_graph) node->grad_norm = l2_norm(g);  // kept for graph export; skipped in training
    if (!node->backward)
      throw std::runtime_error("backward: the graph through '" + node->op +
                               "' was already freed; call backward(grad, /*retain_graph=*/true) the first time");
    Grads grads = node->backward(g);
    if (grads.size() != node->next.size())
      throw std::logic_error("backward of '" + node->op + "' returned " + std::to_string(grads.size()) +
                             " gradients for " + std::to_string(node->next.size()) + " inputs");
    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& e = node->next[i];
      const Tensor& gi = grads[i];
      if (!e.active() || !gi.defined()) continue;
      const Shape& expect = e.node ? e.node->out_shape : e.leaf->shape;
      if (gi.shape() != expect)
        throw std::logic_error("backward of '" + node->op + "' produced a gradient " + describe(gi) + " for input " +
                               std::to_string(i) + " of shape " + shape_str(expect));
      if (e.leaf) {
        accumulate_leaf(*e.leaf, gi);
      } else if (!e.node->grad.defined()) {
        e.node->grad = gi;
      } else if (!add_in_place(e.node->grad, gi)) {
        e.node->grad = add(e.node->grad, gi);
      }
    }
    if (!retain_graph) node->backward = nullptr;  // frees the saved tensors
  }
}

}  // namespace ag
