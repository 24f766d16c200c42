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
thread_local bool g_anomaly = false;
thread_local std::vector<std::string> g_anomaly_scopes;
thread_local Node* g_running_node = nullptr;  // the node whose backward function is running
thread_local NodeGradObserver g_observer;
thread_local NodeBackwardObserver g_backward_observer;
thread_local NodeRecordObserver g_record_observer;
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

bool AnomalyMode::enabled() { return g_anomaly; }
DetectAnomalyGuard::DetectAnomalyGuard() : prev_(g_anomaly) { g_anomaly = true; }
DetectAnomalyGuard::~DetectAnomalyGuard() { g_anomaly = prev_; }
AnomalyScope::AnomalyScope(std::string_view label) : active_(g_anomaly) {
  if (active_) g_anomaly_scopes.emplace_back(label);
}
AnomalyScope::~AnomalyScope() {
  if (active_) g_anomaly_scopes.pop_back();
}

ObserveNodeGradsGuard::ObserveNodeGradsGuard(NodeGradObserver fn) : prev_(std::move(g_observer)) {
  g_observer = std::move(fn);
}
ObserveNodeGradsGuard::~ObserveNodeGradsGuard() { g_observer = std::move(prev_); }
ObserveNodeBackwardGuard::ObserveNodeBackwardGuard(NodeBackwardObserver fn) : prev_(std::move(g_backward_observer)) {
  g_backward_observer = std::move(fn);
}
ObserveNodeBackwardGuard::~ObserveNodeBackwardGuard() { g_backward_observer = std::move(prev_); }
ObserveRecordGuard::ObserveRecordGuard(NodeRecordObserver fn) : prev_(std::move(g_record_observer)) {
  g_record_observer = std::move(fn);
}
ObserveRecordGuard::~ObserveRecordGuard() { g_record_observer = std::move(prev_); }

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

Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward,
              SourceLocation where) {
  auto node = std::make_shared<Node>(op, out.shape(), out.dtype());
  if (g_anomaly) {
    node->anomaly_trace = std::string(where.file) + ":" + std::to_string(where.line) + " (" +
                          where.function + ")";
    if (!g_anomaly_scopes.empty()) node->anomaly_trace += ", in scope '" + g_anomaly_scopes.back() + "'";
  }
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
  if (g_record_observer) g_record_observer(*out.impl().grad_fn, out, inputs, where);
  return out;
}

// ---- saved tensors ------------------------------------------------------------------------------

SavedTensor SavedTensor::save(const Tensor& t) {
  SavedTensor s;
  if (!t.defined()) return s;
  s.data_ = t.detach();
  s.version_ = t.impl().storage->version;
  if (t.requires_grad()) {
    if (t.is_leaf()) s.leaf_ = t.impl_ptr();
    else s.node_ = t.grad_fn();
  }
  return s;
}

SavedTensor SavedTensor::save_output(const Tensor& out) {
  SavedTensor s;
  if (!out.defined()) return s;
  s.data_ = out.detach();
  s.version_ = out.impl().storage->version;
  s.is_output_ = true;
  return s;
}

Tensor SavedTensor::unpack() const {
  if (!data_.defined()) return Tensor();
  const uint64_t now = data_.impl().storage->version;
  if (now != version_) {
    const std::string op = g_running_node ? g_running_node->op : std::string("?");
    throw std::runtime_error("one of the variables needed for gradient computation has been modified by an inplace "
                             "operation: the " + std::string(is_output_ ? "output" : "input") + " " + describe(data_) +
                             " of '" + op + "' is at version " + std::to_string(now) + "; expected version " +
                             std::to_string(version_) + " instead");
  }
  if (!g_grad_enabled) return data_;
  // create_graph: the value with its place in the graph, so that ops on it are recorded.
  if (leaf_) return Tensor(leaf_);
  std::shared_ptr<Node> node = node_;
  if (is_output_) {
    if (!g_running_node) throw std::logic_error("SavedTensor::unpack: an output can only be unpacked by its own backward");
    node = g_running_node->shared_from_this();
  }
  if (!node) return data_;
  auto impl = std::make_shared<TensorImpl>(data_.impl());  // same storage and view; no hooks or grad
  impl->grad_fn = std::move(node);
  impl->requires_grad = true;
  return Tensor(std::move(impl));
}

// ---- backward -----------------------------------------------------------------------------------

static std::vector<Node*> topological_order_of(const std::vector<Node*>& roots) {
  // Iterative depth-first search; post-order reversed is a topological order in which every
  // node comes before the nodes of its inputs (also across several roots sharing one `seen`).
  std::vector<Node*> post;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack;
  for (Node* r : roots) {
    if (!seen.insert(r).second) continue;
    stack.push_back({r, 0});
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
  }
  return {post.rbegin(), post.rend()};
}

std::vector<Node*> topological_order(const Node* root) { return topological_order_of({const_cast<Node*>(root)}); }

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

// acc += g: in place when that is invisible (and no graph is being recorded), else a new sum.
static void accumulate(Tensor& acc, const Tensor& g) {
  if (!acc.defined()) acc = g;
  else if (g_grad_enabled || !add_in_place(acc, g)) acc = add(acc, g);
}

// True when g is a plain dense tensor that only the engine's own handle sees: no other handle
// to it, no other tensor on its storage, no history. Such a gradient can become a leaf's .grad
// as it is, as PyTorch steals an unshared gradient instead of copying it.
static bool engine_owned_dense(const Tensor& g, DType dtype) {
  const TensorImpl& t = g.impl();
  return g.impl_ptr().use_count() == 1 && t.storage.use_count() == 1 && t.dtype == dtype && t.offset == 0 &&
         g.is_contiguous() && t.storage->nbytes == static_cast<size_t>(g.numel()) * dtype_size(dtype) &&
         !t.requires_grad && !t.grad_fn;
}

// Adds g into a leaf's .grad. The first gradient is stored as is when the engine alone holds
// it, else as its own contiguous copy: either way a later in-place accumulation can never write
// into a tensor that someone else still holds.
static void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  if (!leaf.grad) {
    leaf.grad = !g_grad_enabled && engine_owned_dense(g, leaf.dtype) ? g.impl_ptr() : g.to(leaf.dtype).clone().impl_ptr();
    return;
  }
  Tensor acc(std::move(leaf.grad));  // moved out: a user's handle is then the only other owner
  const Tensor gl = g.to(leaf.dtype);
  if (g_grad_enabled || !add_in_place(acc, gl)) acc = add(acc, gl);
  leaf.grad = acc.impl_ptr();
}

template <class F> static void run_grad_hooks(const std::shared_ptr<HookList<GradHook>>& hooks, Tensor& g, F describe_owner) {
  if (!hooks) return;
  const auto entries = hooks->entries;  // a hook may remove itself
  for (const auto& [id, fn] : entries) {
    Tensor r = fn(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape())
      throw std::invalid_argument("hook on " + describe_owner() + " returned a gradient " + describe(r) +
                                  " for a gradient " + describe(g));
    g = r;
  }
}

static void check_finite(const Node& node, size_t i, const Tensor& g) {
  if (!is_floating(g.dtype())) return;
  for (double v : g.to_double_vector()) {
    if (std::isfinite(v)) continue;
    throw std::runtime_error("anomaly: function '" + node.op + "' (output " + dtype_name(node.out_dtype) +
                             shape_str(node.out_shape) + ") returned " + (std::isnan(v) ? "nan" : "inf") +
                             " values in its " + std::to_string(i) + "th output (the gradient of its input " +
                             std::to_string(i) + ", " + describe(g) + "); the forward op was recorded at " +
                             (node.anomaly_trace.empty() ? std::string("an unknown place (recorded outside anomaly mode)")
                                                         : node.anomaly_trace));
  }
}

// True when `shape` broadcasts to `to`: aligned from the right, each dim of `shape` equals
// the dim of `to` or is 1, and `to` may have more (leading) dims.
static bool broadcasts_to(const Shape& shape, const Shape& to) {
  if (shape.size() > to.size()) return false;
  const size_t lead = to.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && shape[i] != to[lead + i]) return false;
  return true;
}

// Broadcast reduction, in one place for every op (PyTorch's validate_outputs): a backward
// function returns the gradient of an input that was broadcast in the forward in the
// broadcast shape, and the engine sums it back to the input's shape (recorded under
// create_graph, as sum_to is an op). Any other shape is a bug in that backward: it throws.
static Tensor reduce_to_input(const Tensor& g, const Shape& input_shape, const Node& node, size_t i) {
  if (!broadcasts_to(input_shape, g.shape()))
    throw std::logic_error("backward of '" + node.op + "' produced a gradient " + describe(g) + " for input " +
                           std::to_string(i) + " of shape " + shape_str(input_shape) + " (" +
                           shape_str(input_shape) + " does not broadcast to " + shape_str(g.shape()) + ")");
  return sum_to(g, input_shape);
}

namespace {

// One backward pass over the graph behind `roots`. Without `inputs` it accumulates into the
// leaves' .grad; with them (ag::grad) it captures their gradients instead and touches no .grad.
struct BackwardPass {
  bool keep_graph = false;
  bool create_graph = false;
  const std::vector<Tensor>* inputs = nullptr;
  std::vector<Tensor> captured;

  struct LeafState {
    int64_t pending = 0;  // edges into this leaf not yet processed in this pass
    bool got = false;     // a gradient arrived
    bool buffered = false;
    Tensor buffer;        // the sum of its gradients, when hooks or capture need it whole
  };
  std::unordered_map<TensorImpl*, LeafState> leaves;
  std::unordered_map<const TensorImpl*, size_t> input_leaf;
  std::unordered_map<const Node*, size_t> input_node;

  // g is taken over (moved in), so that a gradient nobody else holds stays unshared.
  void deliver_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g) {
    LeafState& st = leaves[leaf.get()];
    if (g.defined()) {
      st.got = true;
      if (st.buffered) accumulate(st.buffer, g);
      else accumulate_leaf(*leaf, g);
      g = Tensor();
    }
    if (--st.pending == 0) finish_leaf(leaf, st);
  }

  void finish_leaf(const std::shared_ptr<TensorImpl>& leaf, LeafState& st) {
    if (!st.got) return;
    if (st.buffered) {
      Tensor g = st.buffer;
      st.buffer = Tensor();
      run_grad_hooks(leaf->hooks, g, [&] { return "leaf " + describe(Tensor(leaf)); });
      if (inputs) {
        auto it = input_leaf.find(leaf.get());
        if (it != input_leaf.end()) captured[it->second] = g;
        return;
      }
      accumulate_leaf(*leaf, g);
    }
    if (leaf->post_accumulate_hooks) {
      const auto entries = leaf->post_accumulate_hooks->entries;
      for (const auto& [id, fn] : entries) fn(Tensor(leaf));
    }
  }

  void run(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds) {
    std::vector<Node*> root_nodes;
    for (const Tensor& r : roots)
      if (!r.is_leaf()) root_nodes.push_back(r.grad_fn().get());
    const std::vector<Node*> order = topological_order_of(root_nodes);

    // Count the edges into each leaf, so that a leaf's gradient is known complete (hooks,
    // capture, post-accumulate hooks). Leaves with tensor hooks, and ag::grad's inputs, get
    // their gradients summed first; the others accumulate edge by edge into .grad as before.
    auto note_leaf = [&](const std::shared_ptr<TensorImpl>& leaf) {
      LeafState& st = leaves[leaf.get()];
      ++st.pending;
      st.buffered = inputs || (leaf->hooks && !leaf->hooks->entries.empty());
    };
    for (const Tensor& r : roots)
      if (r.is_leaf()) note_leaf(r.impl_ptr());
    for (Node* n : order)
      for (const Edge& e : n->next)
        if (e.leaf) note_leaf(e.leaf);

    // ag::grad: a node's backward runs only when an input lies below it.
    std::unordered_set<const Node*> below;
    if (inputs) {
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        for (const Edge& e : (*it)->next) {
          if ((e.leaf && input_leaf.count(e.leaf.get())) ||
              (e.node && (input_node.count(e.node.get()) || below.count(e.node.get())))) {
            below.insert(*it);
            break;
          }
        }
      }
    }

    for (size_t i = 0; i < roots.size(); ++i) {
      if (roots[i].is_leaf()) deliver_leaf(roots[i].impl_ptr(), seeds[i]);
      else accumulate(roots[i].grad_fn()->grad, seeds[i].to(roots[i].grad_fn()->out_dtype));
    }

    for (Node* node : order) {
      Tensor g = std::move(node->grad);
      node->grad = Tensor();
      if (g.defined()) {
        run_grad_hooks(node->hooks, g, [&] { return "the output of '" + node->op + "'"; });
        if (auto kept = node->retained.lock()) {
          if (!kept->grad) kept->grad = g.impl_ptr();
          else kept->grad = add(Tensor(kept->grad), g).impl_ptr();
        }
        if (g_observer) g_observer(*node, g);
        if (inputs) {
          auto it = input_node.find(node);
          if (it != input_node.end()) captured[it->second] = g;
        }
      }
      const bool run_fn = g.defined() && (!inputs || below.count(node));
      if (!run_fn) {
        for (const Edge& e : node->next)
          if (e.leaf) deliver_leaf(e.leaf, Tensor());
        continue;
      }
      if (!node->backward)
        throw std::runtime_error("backward: the graph through '" + node->op +
                                 "' was already freed; call backward(grad, /*retain_graph=*/true) the first time");
      Node* const outer = g_running_node;
      g_running_node = node;
      Grads grads;
      try {
        grads = node->backward(g);
      } catch (...) {
        g_running_node = outer;
        throw;
      }
      g_running_node = outer;
      if (grads.size() != node->next.size())
        throw std::logic_error("backward of '" + node->op + "' returned " + std::to_string(grads.size()) +
                               " gradients for " + std::to_string(node->next.size()) + " inputs");
      if (g_backward_observer) g_backward_observer(*node, g, grads);
      for (size_t i = 0; i < grads.size(); ++i) {
        const Edge& e = node->next[i];
        Tensor gi = std::move(grads[i]);  // the engine's only handle from here on
        if (!e.active()) continue;
        if (gi.defined()) {
          const Shape& expect = e.node ? e.node->out_shape : e.leaf->shape;
          if (gi.shape() != expect) gi = reduce_to_input(gi, expect, *node, i);
          if (g_anomaly) check_finite(*node, i, gi);
        }
        if (e.leaf) deliver_leaf(e.leaf, std::move(gi));
        else if (gi.defined()) accumulate(e.node->grad, gi);
      }
      if (!keep_graph) node->backward = nullptr;  // frees the saved tensors
    }
  }
};

// Checks roots and their seeds; fills in the implicit 1 for one-element roots.
std::vector<Tensor> make_seeds(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs,
                               const char* who) {
  if (!grad_outputs.empty() && grad_outputs.size() != roots.size())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                                std::to_string(roots.size()) + " outputs");
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    if (!root.defined()) throw std::invalid_argument(std::string(who) + ": output " + std::to_string(i) + " is undefined");
    if (!root.requires_grad())
      throw std::invalid_argument(std::string(who) + ": tensor " + describe(root) +
                                  " does not require grad (no input of the ops that made it requires grad)");
    Tensor seed = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!seed.defined()) {
      if (root.numel() != 1)
        throw std::invalid_argument(std::string(who) + ": grad can be implicitly created only for one-element tensors, got " +
                                    describe(root) + "; pass an explicit gradient");
      seed = Tensor::ones(root.shape(), root.dtype());
    } else if (seed.shape() != root.shape()) {
      throw std::invalid_argument(std::string(who) + ": gradient " + describe(seed) + " does not match tensor " +
                                  describe(root));
    }
    seeds.push_back(seed);
  }
  return seeds;
}

// Grad mode during a pass: on exactly when the backward pass itself is recorded.
class GradModeScope {
 public:
  explicit GradModeScope(bool on) : prev_(g_grad_enabled) { g_grad_enabled = on; }
  ~GradModeScope() { g_grad_enabled = prev_; }

 private:
  bool prev_;
};

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph, bool create_graph) {
  const std::vector<Tensor> seeds = make_seeds({root}, {grad_output}, "backward");
  GradModeScope mode(create_graph);
  BackwardPass pass;
  pass.keep_graph = retain_graph || create_graph;
  pass.create_graph = create_graph;
  pass.run({root}, seeds);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool create_graph,
                         bool allow_unused) {
  if (outputs.empty()) throw std::invalid_argument("grad: no outputs given");
  if (inputs.empty()) throw std::invalid_argument("grad: no inputs given");
  const std::vector<Tensor> seeds = make_seeds(outputs, grad_outputs, "grad");
  BackwardPass pass;
  pass.keep_graph = retain_graph || create_graph;
  pass.create_graph = create_graph;
  pass.inputs = &inputs;
  pass.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad())
      throw std::invalid_argument("grad: input " + std::to_string(i) + " (" + describe(in) + ") does not require grad");
    if (in.is_leaf()) pass.input_leaf.emplace(in.impl_ptr().get(), i);
    else pass.input_node.emplace(in.grad_fn().get(), i);
  }
  {
    GradModeScope mode(create_graph);
    pass.run(outputs, seeds);
  }
  // The same tensor listed twice gets its gradient in both places.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (pass.captured[i].defined()) continue;
    for (size_t j = 0; j < inputs.size(); ++j)
      if (j != i && pass.captured[j].defined() &&
          (inputs[j].same(inputs[i]) || (!inputs[i].is_leaf() && inputs[j].grad_fn() == inputs[i].grad_fn())))
        pass.captured[i] = pass.captured[j];
    if (!pass.captured[i].defined() && !allow_unused)
      throw std::invalid_argument("grad: input " + std::to_string(i) + " (" + describe(inputs[i]) +
                                  ") was not used in the graph of the outputs; pass allow_unused=true to get an "
                                  "undefined gradient for it");
  }
  return pass.captured;
}

}  // namespace ag
