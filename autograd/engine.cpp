#include "autograd/engine.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "autograd/dims.h"
#include "autograd/grad_lock.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/node_names.h"
#include "autograd/ops.h"  // sum_to: the broadcast reduction of a gradient (reduce_to_input)
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local Node* g_running_node = nullptr;  // the node whose backward function is running
struct BackwardPass;
thread_local const BackwardPass* g_running_pass = nullptr;  // the pass that runs it
thread_local NodeGradObserver g_observer;
thread_local NodeBackwardObserver g_backward_observer;
thread_local NodeRecordObserver g_record_observer;
// SavedTensors made since the last record() on this thread: an op saves its tensors in the
// capture list of the backward function it hands to record(), so they belong to that node.
thread_local int64_t g_saved_since_record = 0;
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

const std::string& op_name(const Node& node) { return node.op; }

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
  if (!GradMode::enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward,
              SourceLocation where) {
  auto node = std::make_shared<Node>(op, out.shape(), out.dtype());
  node->saved_tensors = g_saved_since_record > 0;
  g_saved_since_record = 0;
  node->autocast = autocast_precision();
  if (AnomalyMode::enabled()) {
    node->anomaly_trace = std::string(where.file) + ":" + std::to_string(where.line) + " (" + where.function + ")";
    if (const std::string* scope = current_anomaly_scope()) node->anomaly_trace += ", in scope '" + *scope + "'";
    node->forward_stack = capture_forward_stack();
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
  s.original_ = t.impl_ptr();
  s.version_ = t.impl().storage->version;
  ++g_saved_since_record;
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
  ++g_saved_since_record;
  return s;
}

Tensor SavedTensor::unpack() const {
  if (!data_.defined()) return Tensor();
  const uint64_t now = data_.impl().storage->version;
  if (now != version_) {
    // torch's message: the tensor as torch prints its type, the node it is an output of (for a
    // saved input, its node now: the in-place op's; for a saved output, the node that saved
    // it), the versions; then which backward needed it ('op', attograd's name).
    const std::string op = g_running_node ? g_running_node->op : std::string("?");
    std::shared_ptr<Node> now_made_by = node_;
    if (const std::shared_ptr<TensorImpl> original = original_.lock()) now_made_by = Tensor(original).grad_fn();
    const Node* maker = is_output_ ? g_running_node : now_made_by.get();
    static const char* const type_names[] = {"FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"};
    const char* type_name = data_.dtype() == DType::Float32   ? type_names[0]
                            : data_.dtype() == DType::Float64 ? type_names[1]
                            : data_.dtype() == DType::Int64   ? type_names[2]
                                                              : type_names[3];
    // torch 2 names the node by its op and overload ("Add" for AddBackward0, "Pow1" for
    // PowBackward1), CopySlices by its C++ class.
    std::string maker_name = maker ? torch_node_name(maker->op) : std::string();
    if (const size_t at = maker_name.rfind("Backward"); at != std::string::npos && at + 9 == maker_name.size()) {
      const char overload = maker_name.back();
      maker_name.resize(at);
      if (overload != '0') maker_name += overload;
    }
    throw std::runtime_error(
        "one of the variables needed for gradient computation has been modified by an inplace operation: [torch." +
        std::string(type_name) + " " + shape_str(data_.shape()) + "]" +
        (maker ? ", which is output 0 of " + maker_name + "," : std::string()) + " is at version " +
        std::to_string(now) + "; expected version " + std::to_string(version_) + " instead. (attograd: the " +
        (is_output_ ? "output" : "input") + " " + describe(data_) + " of '" + op +
        "', saved for its backward.) Hint: enable anomaly detection to find the operation that failed to compute "
        "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).");
  }
  if (!GradMode::enabled()) return data_;
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

// a + b for two gradients of one shape and dtype, as a new tensor; recorded (an "add" node) when
// the backward pass is, so that create_graph differentiates through the accumulation too.
static Tensor sum_of(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw std::logic_error("backward: cannot add gradients " + describe(a) + " and " + describe(b));
  const Tensor ad = a.is_contiguous() ? a : copy_to_contiguous(a, a.dtype());
  const Tensor bd = b.is_contiguous() ? b : copy_to_contiguous(b, b.dtype());
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  AG_DISPATCH_FLOAT(a.dtype(), "accumulate", [&] {
    const scalar_t* x = ad.data<scalar_t>();
    const scalar_t* y = bd.data<scalar_t>();
    scalar_t* z = out.data<scalar_t>();
    parallel::parallel_for(out.numel(), 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) z[i] = x[i] + y[i];
    });
  });
  // out = a + b  =>  da = g, db = g
  if (should_record({&a, &b})) record(out, "add", {a, b}, [](const Tensor& g) { return Grads{g, g}; });
  return out;
}

// acc += g in place (acc any layout; g converted to acc's dtype), bumping acc's version: the
// same sums, element by element, as sum_of.
static void add_into(Tensor& acc, const Tensor& g) {
  const Tensor gd = g.dtype() == acc.dtype() && g.is_contiguous() ? g : copy_to_contiguous(g, acc.dtype());
  if (!acc.is_contiguous()) {
    acc.copy_(sum_of(copy_to_contiguous(acc, acc.dtype()), gd));
    return;
  }
  acc.bump_version();
  AG_DISPATCH_FLOAT(acc.dtype(), "accumulate", [&] {
    scalar_t* a = acc.data<scalar_t>();
    const scalar_t* b = gd.data<scalar_t>();
    parallel::parallel_for(acc.numel(), 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] += b[i];
    });
  });
}

// True when t is a plain dense tensor that only the engine's own handle sees: no other handle
// to it, no other tensor on its storage, no history. The engine may then write into it, or hand
// it over as a leaf's .grad, as PyTorch steals an unshared gradient instead of copying it.
static bool engine_owned_dense(const Tensor& t, DType dtype) {
  const TensorImpl& i = t.impl();
  return t.impl_ptr().use_count() == 1 && i.storage.use_count() == 1 && i.dtype == dtype && i.offset == 0 &&
         t.is_contiguous() && i.storage->nbytes == static_cast<size_t>(t.numel()) * dtype_size(dtype) &&
         !i.requires_grad && !i.grad_fn;
}

// acc += g for the engine's own sums (a node's output gradient, a leaf's buffer): in place when
// nobody else can see acc and no graph is being recorded, else a new sum.
static void accumulate(Tensor& acc, const Tensor& g) {
  if (!acc.defined()) acc = g;
  else if (!GradMode::enabled() && engine_owned_dense(acc, g.dtype()) && acc.shape() == g.shape()) add_into(acc, g);
  else acc = sum_of(acc, g);
}

std::mutex& grad_accumulation_mutex(const TensorImpl* leaf) {
  // Striped by address: a mutex per leaf without one in every TensorImpl. Two leaves may share
  // a stripe, which only serialises their accumulation (never nested: no deadlock).
  static std::mutex stripes[64];
  return stripes[(reinterpret_cast<uintptr_t>(leaf) >> 4) % 64];
}

// Adds g into a leaf's .grad, as torch's AccumulateGrad (engine.h): the first gradient is
// stored as is when the engine alone holds it, else as its own contiguous copy; later ones are
// added in place, or out of place when the backward pass is recorded. Under the leaf's lock, as
// torch's AccumulateGrad takes one: two threads' backward passes into one leaf (each through its
// own graph) add both gradients instead of losing one. A .grad of another shape than the new
// gradient (the leaf's `.data` was replaced since) is torch's size mismatch, not a write past it.
static void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  // The .grad a recorded sum replaces is dropped after the lock is released: a storage borrowed
  // from NumPy takes the GIL to be released, and a Python thread may hold the GIL waiting here.
  Tensor acc;
  std::lock_guard<std::mutex> lock(grad_accumulation_mutex(&leaf));
  if (leaf.grad && leaf.grad->shape != g.shape())
    throw size_mismatch(leaf.grad->shape, g.shape(), "accumulating a gradient " + describe(g) + " into .grad " +
                                                         describe(Tensor(leaf.grad)) + " (was the leaf's .data replaced?)");
  if (!leaf.grad) {
    leaf.grad = !GradMode::enabled() && engine_owned_dense(g, leaf.dtype) ? g.impl_ptr() : g.to(leaf.dtype).clone().impl_ptr();
    return;
  }
  acc = Tensor(leaf.grad);
  if (GradMode::enabled()) leaf.grad = sum_of(acc, g.to(acc.dtype())).impl_ptr();
  else add_into(acc, g);
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

// ---- node hooks (engine.h) ------------------------------------------------------------------

template <class F>
static HookHandle add_node_hook(std::shared_ptr<NodeHooks>& hooks, HookList<F> NodeHooks::*list, F fn) {
  if (!fn) throw std::invalid_argument("register_hook: empty function");
  if (!hooks) hooks = std::make_shared<NodeHooks>();
  HookList<F>& l = (*hooks).*list;
  const uint64_t id = l.next_id++;
  l.entries.emplace_back(id, std::move(fn));
  return HookHandle([weak = std::weak_ptr<NodeHooks>(hooks), list, id] {
    if (auto h = weak.lock()) std::erase_if(((*h).*list).entries, [id](const auto& e) { return e.first == id; });
  });
}

HookHandle add_node_pre_hook(std::shared_ptr<NodeHooks>& hooks, NodePreHook fn) {
  return add_node_hook(hooks, &NodeHooks::pre, std::move(fn));
}

HookHandle add_node_post_hook(std::shared_ptr<NodeHooks>& hooks, NodePostHook fn) {
  return add_node_hook(hooks, &NodeHooks::post, std::move(fn));
}

// A hook's replacement gradients: as many as it was given, each of the shape it replaces.
static void check_replacement(const Grads& r, const Grads& given, const char* kind, const std::string& node) {
  if (r.size() != given.size())  // torch's words, then which node
    throw std::runtime_error(std::string("hook has returned an incorrect number of values (got ") + std::to_string(r.size()) +
                             ", but expected " + std::to_string(given.size()) + ") (" + kind + " of " + node + ")");
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].defined() && given[i].defined() && r[i].shape() != given[i].shape())
      throw std::runtime_error(std::string(kind) + " of " + node + " returned a gradient " + describe(r[i]) + " at " +
                               std::to_string(i) + " for a gradient " + describe(given[i]));
}

Grads run_node_pre_hooks(const std::shared_ptr<NodeHooks>& hooks, Grads grad_outputs, const std::string& node) {
  if (!hooks || hooks->pre.entries.empty()) return grad_outputs;
  const auto entries = hooks->pre.entries;  // a hook may remove itself, or another
  for (const auto& [id, fn] : entries) {
    Grads r = fn(grad_outputs);
    if (r.empty()) continue;
    check_replacement(r, grad_outputs, "a pre-hook", node);
    grad_outputs = std::move(r);
  }
  return grad_outputs;
}

Grads run_node_post_hooks(const std::shared_ptr<NodeHooks>& hooks, Grads grad_inputs, const Grads& grad_outputs,
                          const std::string& node) {
  if (!hooks || hooks->post.entries.empty()) return grad_inputs;
  const auto entries = hooks->post.entries;
  for (const auto& [id, fn] : entries) {
    Grads r = fn(grad_inputs, grad_outputs);
    if (r.empty()) continue;
    check_replacement(r, grad_inputs, "a post-hook", node);
    grad_inputs = std::move(r);
  }
  return grad_inputs;
}

void group_outputs(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& core) {
  auto group = std::make_shared<NodeGroup>();
  group->core = core;
  for (const Tensor& t : outputs)
    if (t.defined() && t.impl().grad_fn) group->outputs.push_back(t.impl().grad_fn);
  if (group->outputs.size() < 2 && !core) return;
  for (const Tensor& t : outputs)
    if (t.defined() && t.impl().grad_fn) t.impl().grad_fn->group = group;
  if (core) core->group = group;
}

static void check_finite(const Node& node, size_t i, const Tensor& g) {
  if (!is_floating(g.dtype())) return;
  for (double v : g.to_double_vector()) {
    if (std::isfinite(v)) continue;
    std::string where;
    if (node.forward_stack)
      where = "; the forward call that made it (most recent call first):\n" + describe_user_frames(*node.forward_stack) +
              "  (the op itself: " + node.anomaly_trace + ")";
    else
      where = "; the forward op was recorded at an unknown place (outside anomaly mode)";
    throw std::runtime_error("anomaly: function '" + node.op + "' (output " + dtype_name(node.out_dtype) +
                             shape_str(node.out_shape) + ") returned " + (std::isnan(v) ? "nan" : "inf") +
                             " values in its " + std::to_string(i) + "th output (the gradient of its input " +
                             std::to_string(i) + ", " + describe(g) + ")" + where);
  }
}

// torch's text, with the spelling of the option in attograd.
static std::runtime_error graph_freed(const Node& node) {
  return std::runtime_error(
      "backward through '" + node.op +
      "': Trying to backward through the graph a second time (or directly access saved tensors after they have "
      "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
      "autograd.grad(). Specify retain_graph=True (backward({}, {.retain_graph = true}), grad(..., "
      "{.retain_graph = true})) if you need to backward through the graph a second time or if you need to access "
      "saved tensors after calling backward.");
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

// Where one backward pass puts the gradients that reach the graph's ends.
enum class Target {
  AllLeaves,   // Tensor::backward(): into every leaf's .grad
  Inputs,      // backward(inputs=): into the .grad of the given tensors only
  Capture,     // ag::grad: returned for the given tensors; no .grad is touched
};

// One backward pass over the graph behind `roots`. run() is the walk: the reference's algorithm
// (reference/tensor.cpp) on this engine's graph. Everything else a pass does is reached from it
// through the calls below it, one for each point of the walk:
//   received(node, g)      a node's output gradient is complete: tensor hooks, retain_grad, the
//                          gradient observer, and the tensors grad() or backward(inputs=) asked for
//   runs(node, has_grad)   grad() and backward(inputs=) run only the nodes above those tensors;
//                          the sibling outputs of a multi-output op that get no gradient
//   call_backward(node, g) the node's pre-hooks, its backward function under its forward's
//                          autocast precision, the running node set (SavedTensor::unpack,
//                          backward_needs_input_grad), the backward observer after it; each
//                          input's gradient summed to its shape where the forward broadcast it,
//                          anomaly mode's check; the node's post-hooks
//   pass_on(node, i, g)    input i's gradient added into the input's node, or delivered to a
//                          leaf (whose hooks run once its last gradient is in)
struct BackwardPass {
  Target target = Target::AllLeaves;
  bool keep_graph = false;
  std::vector<Tensor> inputs;    // Inputs and Capture: the tensors asked for
  std::vector<Tensor> captured;  // Capture: their gradients

  // ---- the walk --------------------------------------------------------------------------------

  void run(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds) {
    // Every node comes before the nodes of its inputs, so that a node's output gradient is
    // complete (every node that used the output has run) when the walk reaches it.
    const std::vector<Node*> order = topological_order_of(nodes_of(roots));
    prepare(roots, order);
    for (size_t i = 0; i < roots.size(); ++i) seed(roots[i], seeds[i]);
    for (Node* node : order) {
      Tensor g = std::move(node->grad);  // dLoss/d(node's output), complete
      node->grad = Tensor();
      if (g.defined()) received(*node, g);
      if (!runs(*node, g.defined())) {
        pass_nothing(*node);
        continue;
      }
      const profiler::RecordScope profile(node->op, profiler::Category::Backward);  // its backward and passing on
      Grads grads = call_backward(*node, std::move(g));                               // dLoss/d(each input)
      for (size_t i = 0; i < grads.size(); ++i) pass_on(*node, i, std::move(grads[i]));
      if (!keep_graph && node->saved_tensors) node->backward = nullptr;  // frees its saved tensors (engine.h)
    }
  }

  // ---- the points of the walk ------------------------------------------------------------------

  void received(Node& node, Tensor& g) {
    run_grad_hooks(node.hooks, g, [&] { return "the output of '" + node.op + "'"; });
    if (auto kept = node.retained.lock()) kept->grad = kept->grad ? sum_of(Tensor(kept->grad), g).impl_ptr() : g.impl_ptr();
    if (g_observer) g_observer(node, g);
    if (target != Target::AllLeaves) reached_input_node(&node, g);
  }

  // backward(inputs=) runs a non-leaf input's node too, as torch's (its node hooks run). For an
  // output of a multi-output op, its siblings' hooks learn here which of them get no gradient.
  bool runs(const Node& node, bool has_grad) {
    const bool run = has_grad && (target == Target::AllLeaves || below.count(&node) ||
                                  (target == Target::Inputs && input_node.count(&node)));
    if (node.group) {
      if (!has_grad) {
        seen_without_grad.insert(&node);
        if (groups_run.count(node.group.get())) hook_undefined(node);
      } else if (run) {
        hook_siblings_without_grad(node);
      }
    }
    return run;
  }

  // The node's pre-hooks (which may replace g, or drop it: then nothing flows on), its backward,
  // each input's gradient summed to the input's shape where the forward broadcast it (and
  // anomaly mode's check), then its post-hooks, which see those.
  Grads call_backward(Node& node, Tensor g) {
    const bool node_hooks = node.node_hooks && !node.runs_own_node_hooks;
    if (node_hooks) {
      Grads pre = run_node_pre_hooks(node.node_hooks, {std::move(g)}, node.op);
      g = std::move(pre[0]);
      if (!g.defined()) return Grads(node.next.size());
    }
    if (!node.backward) throw graph_freed(node);
    Node* const outer = g_running_node;
    const BackwardPass* const outer_pass = g_running_pass;
    g_running_node = &node;
    g_running_pass = this;
    Grads grads;
    try {
      // The gradients' GEMMs at the forward's precision (autograd/autocast.h)
      const AutocastGuard precision(node.autocast);
      grads = node.backward(g);
    } catch (...) {
      g_running_node = outer;
      g_running_pass = outer_pass;
      throw;
    }
    g_running_node = outer;
    g_running_pass = outer_pass;
    if (grads.size() != node.next.size())
      throw std::logic_error("backward of '" + node.op + "' returned " + std::to_string(grads.size()) +
                             " gradients for " + std::to_string(node.next.size()) + " inputs");
    if (g_backward_observer) g_backward_observer(node, g, grads);
    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& e = node.next[i];
      Tensor& gi = grads[i];
      if (!e.active() || !gi.defined()) continue;
      const Shape& expect = e.node ? e.node->out_shape : e.leaf->shape;
      if (gi.shape() != expect) gi = reduce_to_input(gi, expect, node, i);
      if (AnomalyMode::enabled()) check_finite(node, i, gi);
    }
    if (node_hooks) grads = run_node_post_hooks(node.node_hooks, std::move(grads), {g}, node.op);
    return grads;
  }

  // Input i's gradient into the input's node, or delivered to a leaf (whose hooks run once its
  // last gradient is in). gi is taken over (the engine's only handle on it from here on).
  void pass_on(const Node& node, size_t i, Tensor gi) {
    const Edge& e = node.next[i];
    if (!e.active()) return;
    if (e.leaf) deliver_leaf(e.leaf, std::move(gi));
    else if (gi.defined()) accumulate(e.node->grad, gi);
  }

  // A node that does not run still counts as done for the leaves it feeds.
  void pass_nothing(const Node& node) {
    for (const Edge& e : node.next)
      if (e.leaf) deliver_leaf(e.leaf, Tensor());
  }

  // ---- before the walk -------------------------------------------------------------------------

  static std::vector<Node*> nodes_of(const std::vector<Tensor>& roots) {
    std::vector<Node*> nodes;
    for (const Tensor& r : roots)
      if (!r.is_leaf()) nodes.push_back(r.grad_fn().get());
    return nodes;
  }

  void seed(const Tensor& root, const Tensor& g) {
    if (root.is_leaf()) deliver_leaf(root.impl_ptr(), g);
    else accumulate(root.grad_fn()->grad, g.to(root.grad_fn()->out_dtype));
  }

  void prepare(const std::vector<Tensor>& roots, const std::vector<Node*>& order) {
    // Count the edges into each leaf, so that a leaf's gradient is known complete (hooks,
    // capture, post-accumulate hooks). Leaves with tensor hooks, and ag::grad's inputs, get
    // their gradients summed first; the others accumulate edge by edge into .grad.
    auto note_leaf = [&](const std::shared_ptr<TensorImpl>& leaf) {
      if (!wanted(leaf.get())) return;
      LeafState& st = leaves[leaf.get()];
      ++st.pending;
      st.buffered = target == Target::Capture || (leaf->hooks && !leaf->hooks->entries.empty()) ||
                    (leaf->accumulate_grad_hooks &&
                     !(leaf->accumulate_grad_hooks->pre.entries.empty() && leaf->accumulate_grad_hooks->post.entries.empty()));
    };
    for (const Tensor& r : roots)
      if (r.is_leaf()) note_leaf(r.impl_ptr());
    for (Node* n : order)
      for (const Edge& e : n->next)
        if (e.leaf) note_leaf(e.leaf);

    // With inputs given, a node's backward runs only when an input lies below it.
    if (target != Target::AllLeaves) {
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
    for (Node* n : order)
      if (n->group) in_order.insert(n);
  }

  // ---- grad() and backward(inputs=): the tensors asked for -------------------------------------

  struct LeafState {
    int64_t pending = 0;  // edges into this leaf not yet processed in this pass
    bool got = false;     // a gradient arrived
    bool buffered = false;
    Tensor buffer;        // the sum of its gradients, when hooks or capture need it whole
  };
  std::unordered_map<TensorImpl*, LeafState> leaves;
  std::unordered_map<const TensorImpl*, size_t> input_leaf;
  std::unordered_map<const Node*, size_t> input_node;
  // With inputs given: the nodes below which an input lies (the others need not run).
  std::unordered_set<const Node*> below;
  // Siblings of a multi-output op (engine.h): the pass's nodes, the groups that ran a member,
  // the members seen without a gradient, and those whose hooks got an undefined one already.
  std::unordered_set<const Node*> in_order;
  std::unordered_set<const NodeGroup*> groups_run;
  std::unordered_set<const Node*> seen_without_grad;
  std::unordered_set<const Node*> hooked_undefined;

  // Does this pass use the gradient that flows along e?
  bool needs(const Edge& e) const {
    if (!e.active()) return false;
    if (target == Target::AllLeaves) return true;
    if (e.leaf) return input_leaf.count(e.leaf.get()) > 0;
    return input_node.count(e.node.get()) > 0 || below.count(e.node.get()) > 0;
  }

  void set_inputs(const std::vector<Tensor>& ts, const char* who) {
    inputs = ts;
    captured.assign(ts.size(), Tensor());
    for (size_t i = 0; i < ts.size(); ++i) {
      const Tensor& in = ts[i];
      if (!in.defined() || !in.requires_grad())  // torch's message, then which input
        throw std::invalid_argument("One of the differentiated Tensors does not require grad (" + std::string(who) +
                                    ": input " + std::to_string(i) + ", " + (in.defined() ? describe(in) : "undefined") + ")");
      if (in.is_leaf()) input_leaf.emplace(in.impl_ptr().get(), i);
      else input_node.emplace(in.grad_fn().get(), i);
    }
  }

  // Does this leaf take part? Every leaf for backward(); only the inputs otherwise.
  bool wanted(const TensorImpl* leaf) const { return target == Target::AllLeaves || input_leaf.count(leaf); }

  // g is taken over (moved in), so that a gradient nobody else holds stays unshared.
  void deliver_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g) {
    if (!wanted(leaf.get())) return;
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
    // torch's AccumulateGrad: tensor hooks, node pre-hooks, accumulation, post-accumulate hooks,
    // node post-hooks (which see the gradient accumulated: .grad itself when it was the first).
    Tensor accumulated;
    if (st.buffered) {
      Tensor g = std::move(st.buffer);
      st.buffer = Tensor();
      run_grad_hooks(leaf->hooks, g, [&] { return "leaf " + describe(Tensor(leaf)); });
      if (target == Target::Capture) {
        captured[input_leaf.at(leaf.get())] = g;
        return;
      }
      if (leaf->accumulate_grad_hooks) {
        Grads pre = run_node_pre_hooks(leaf->accumulate_grad_hooks, {std::move(g)}, "AccumulateGrad");
        g = std::move(pre[0]);
        if (!g.defined()) return;
      }
      const bool first = !leaf->grad;
      accumulate_leaf(*leaf, g);
      accumulated = first ? Tensor(leaf->grad) : g;
    }
    if (leaf->post_accumulate_hooks) {
      const auto entries = leaf->post_accumulate_hooks->entries;
      for (const auto& [id, fn] : entries) fn(Tensor(leaf));
    }
    if (accumulated.defined() && leaf->accumulate_grad_hooks)
      run_node_post_hooks(leaf->accumulate_grad_hooks, {}, {accumulated}, "AccumulateGrad");
  }

  // A member of a multi-output op runs: each sibling that gets no gradient in this pass has its
  // tensor hooks called with an undefined one, once (engine.h).
  void hook_siblings_without_grad(const Node& node) {
    if (!groups_run.insert(node.group.get()).second) return;
    for (const std::weak_ptr<Node>& w : node.group->outputs) {
      std::shared_ptr<Node> s = w.lock();
      if (!s || s.get() == &node) continue;
      if (!in_order.count(s.get()) || seen_without_grad.count(s.get())) hook_undefined(*s);
    }
  }

  void hook_undefined(const Node& n) {
    if (!n.hooks || n.hooks->entries.empty() || !hooked_undefined.insert(&n).second) return;
    const auto entries = n.hooks->entries;
    for (const auto& [id, fn] : entries) fn(Tensor());
  }

  // A non-leaf tensor asked for by grad() or backward(inputs=) has its gradient g.
  void reached_input_node(const Node* node, const Tensor& g) {
    auto it = input_node.find(node);
    if (it == input_node.end()) return;
    if (target == Target::Capture) captured[it->second] = g;
    else accumulate_leaf(inputs[it->second].impl(), g);
  }
};

// Checks roots and their seeds; fills in the implicit 1 for one-element roots.
std::vector<Tensor> make_seeds(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs,
                               const char* who) {
  if (roots.empty()) throw std::invalid_argument(std::string(who) + ": no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != roots.size())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                                std::to_string(roots.size()) + " outputs");
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    if (!root.defined()) throw std::invalid_argument(std::string(who) + ": output " + std::to_string(i) + " is undefined");
    if (!root.requires_grad())  // torch's message, then the tensor
      throw std::invalid_argument("element " + std::to_string(i) + " of tensors does not require grad and does not have a grad_fn (" +
                                  std::string(who) + ": " + describe(root) + ")");
    Tensor seed = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!seed.defined()) {
      if (root.numel() != 1)  // torch's message, then the tensor
        throw std::invalid_argument("grad can be implicitly created only for scalar outputs (" + std::string(who) + ": " +
                                    describe(root) + "; pass an explicit gradient)");
      seed = Tensor::ones(root.shape(), root.dtype());
    } else if (seed.shape() != root.shape()) {  // torch's message, then attograd's description
      throw std::invalid_argument("Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " +
                                  shape_str(seed.shape()) + " and output[" + std::to_string(i) + "] has a shape of " +
                                  shape_str(root.shape()) + ". (" + who + ": gradient " + describe(seed) + ", tensor " +
                                  describe(root) + ")");
    }
    seeds.push_back(seed);
  }
  return seeds;
}

}  // namespace

bool backward_needs_input_grad(size_t i) {
  if (!g_running_node || !g_running_pass)
    throw std::logic_error("backward_needs_input_grad: no backward function is running on this thread");
  if (i >= g_running_node->next.size())
    throw std::out_of_range("needs_input_grad: index " + std::to_string(i) + " but '" + g_running_node->op + "' has " +
                            std::to_string(g_running_node->next.size()) + " inputs");
  return g_running_pass->needs(g_running_node->next[i]);
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors, const BackwardOptions& options) {
  const std::vector<Tensor> seeds = make_seeds(tensors, grad_tensors, "backward");
  BackwardPass pass;
  pass.keep_graph = options.retain_graph.value_or(options.create_graph);
  if (options.inputs.has_value()) {
    if (options.inputs.value().empty()) throw std::invalid_argument("`inputs` argument to `backward()` cannot be empty.");
    pass.target = Target::Inputs;
    pass.set_inputs(options.inputs.value(), "backward");
  }
  SetGradEnabledGuard mode(options.create_graph);  // the backward pass is recorded exactly then
  pass.run(tensors, seeds);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& options) {
  if (inputs.empty()) throw std::invalid_argument("grad requires non-empty inputs.");  // libtorch's message
  const std::vector<Tensor> seeds = make_seeds(outputs, grad_outputs, "grad");
  BackwardPass pass;
  pass.target = Target::Capture;
  pass.keep_graph = options.retain_graph.value_or(options.create_graph);
  pass.set_inputs(inputs, "grad");
  {
    SetGradEnabledGuard mode(options.create_graph);
    pass.run(outputs, seeds);
  }
  std::vector<Tensor>& captured = pass.captured;
  // The same tensor listed twice gets its gradient in both places.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (captured[i].defined()) continue;
    for (size_t j = 0; j < inputs.size(); ++j)
      if (j != i && captured[j].defined() &&
          (inputs[j].same(inputs[i]) || (!inputs[i].is_leaf() && inputs[j].grad_fn() == inputs[i].grad_fn())))
        captured[i] = captured[j];
    if (captured[i].defined()) continue;
    if (options.materialize_grads) captured[i] = Tensor::zeros(inputs[i].shape(), inputs[i].dtype());
    else if (!options.allow_unused)  // torch's message, then attograd's spelling
      throw std::invalid_argument("The differentiated Tensor at index " + std::to_string(i) +
                                  " appears to not have been used in the graph. Set allow_unused=True if this is the "
                                  "desired behavior. (" + describe(inputs[i]) + "; attograd: {.allow_unused = true} "
                                  "gives an undefined gradient for it, {.materialize_grads = true} zeros)");
  }
  return captured;
}

}  // namespace ag
