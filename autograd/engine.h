// The reverse-mode engine: graph nodes, grad modes, saved tensors, hooks and backward.
//
// Ownership (no reference cycles, so the graph frees itself):
//   output TensorImpl --grad_fn--> Node --next--> input Nodes (or input leaf TensorImpls)
// A node never holds a strong reference to its own output. Tensors a backward function needs
// are captured as SavedTensor (below): an input is saved with its identity in the graph (its
// leaf TensorImpl or its node, both of which the node's edges hold anyway); the op's own output
// is saved as data only, and re-attached to the node that is running when it is unpacked.
//
// Higher-order gradients (create_graph). The signature of a backward function stays
// Grads(const Tensor& grad_output). The engine runs backward functions with GradMode on
// exactly when create_graph is set, and off otherwise. A backward function is written once,
// with ops of ops.h on SavedTensor::unpack() values (which under create_graph carry their graph
// identity), so the backward pass is itself recorded and can be differentiated again, to any
// order; without create_graph the same ops just compute (unpack() returns the plain data). A
// fused kernel in a backward is an op of its own (tanh_backward, softmax_backward: ops.h) or
// goes through fused_backward (autograd/ops/fused_backward.h): either runs only the kernel
// without create_graph.
//
// Broadcasting. A backward function returns the gradient of an input that its forward
// broadcast in the broadcast shape; the engine sums it back to the input's shape (sum_to,
// recorded under create_graph), as PyTorch's validate_outputs does. Any other shape throws.
//
// In-place safety. Every Storage has a version counter that every in-place write through the
// public API bumps (Tensor::fill_, copy_, add_, ..., bump_version(); views and detach() share
// the storage, hence the counter). SavedTensor::save records the version; unpack() throws
// "modified by an inplace operation" naming the op, the shape and both versions. In grad mode
// an in-place op on a tensor that requires grad (or with an operand that does) is recorded and
// the tensor, or a view's base, takes the new history (autograd/tensor_inplace.cpp); under
// NoGradGuard it only writes, as optimizers and initialisers need.
//
// Accumulation into .grad, as torch's AccumulateGrad. A leaf's first gradient becomes its
// .grad (taken over without a copy when the engine alone holds it, else copied); later ones are
// added in place, so a .grad handle the user holds sees the sum (its version is bumped), unless
// the backward pass is itself recorded (create_graph): then .grad = .grad + g, out of place.
//
// Freeing the graph. Without retain_graph, a node that saved tensors (SavedTensor::save or
// save_output while it was being recorded) drops its backward function, and with it those
// tensors, once it has run: a second backward through it throws torch's "Trying to backward
// through the graph a second time". A node that saved nothing keeps its function, so
// `b = a + 1; b.sum().backward(); b.sum().backward()` works, as in torch.
//
// Hooks. Tensor::register_hook(fn): fn sees the gradient of that tensor in every backward
// pass (the sum over all its uses) and may return a replacement (an undefined Tensor keeps
// it). On a leaf the hook is kept on its TensorImpl and runs before the gradient is
// accumulated into .grad; on an intermediate it is kept on the node that made the tensor and
// runs before that node's backward. Tensor::retain_grad() keeps an intermediate's gradient in
// its .grad(). register_post_accumulate_grad_hook(fn), leaves only: fn(leaf) runs as soon as
// this backward pass has accumulated the leaf's last gradient into .grad (the engine counts
// the edges into each leaf), while the rest of the graph is still being processed: what a
// data-parallel trainer needs to start reducing a bucket of gradients early. It does not run
// for ag::grad (nothing is accumulated there).
//
// Node hooks (torch's grad_fn.register_prehook and grad_fn.register_hook). A node's pre-hooks see
// its output's gradient (after the tensor hooks and retain_grad) right before its backward runs,
// and may replace it; its post-hooks see what the backward returned and the gradient it got, and
// may replace the former. A leaf's NodeHooks (TensorImpl::accumulate_grad_hooks) are those of
// torch's AccumulateGrad node: pre-hooks after the leaf's tensor hooks, then accumulation, the
// post-accumulate hooks, the post-hooks (with no grad_inputs); only in backward(), as ag::grad
// runs no AccumulateGrad. A node whose backward the pass does not need runs none of its node
// hooks; backward(inputs=) runs the node of a non-leaf input, as torch's does.
//
// Several outputs (a custom Function's, unbind's, split's). attograd's nodes have one output
// each, so the outputs of one op are sibling nodes of a NodeGroup. When one of them runs, a
// sibling that gets no gradient in that pass has its tensor hooks called with an undefined
// gradient (Python's None), as torch calls the hooks of every output of a node it runs. A
// custom Function's outputs also share its core node, which stands for torch's one node: its
// node hooks see every output's gradient, run by the function itself (function.cpp).
//
// Anomaly detection (torch.autograd.detect_anomaly). Inside DetectAnomalyGuard each new node
// keeps the call stack of the forward call that made it (Boost.Stacktrace: return addresses
// only, symbolised when an error needs them) and the innermost AnomalyScope label the caller
// set (e.g. "block 1.attn"). When a backward function returns a NaN or an infinity, the engine
// throws naming the op, the input position and the first frames of that stack outside
// attograd's autograd/ sources: the user's line that called the op, as PyTorch prints the
// Python traceback of the forward call. Line numbers need debug line tables (-g1 is enough;
// Release builds of attograd carry them, see CMakeLists.txt). Outside the guard nothing is
// captured or checked, so the cost there is one flag test per recorded op.
//
// Diagnostics. A NodeGradObserver (see ObserveNodeGradsGuard) sees every node's output
// gradient during a backward pass; graph export installs one to label nodes with gradient
// norms. ObserveNodeBackwardGuard and ObserveRecordGuard show the gradients each node sent and
// the forward values (attograd explore). With none installed the engine pays one null check per node.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/anomaly.h"
#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
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

// A node hook's gradients: one per output going in (pre), one per input coming out (post). A
// hook that returns an empty list keeps the ones it was given.
using NodePreHook = std::function<Grads(const Grads& grad_outputs)>;
using NodePostHook = std::function<Grads(const Grads& grad_inputs, const Grads& grad_outputs)>;
struct NodeHooks {
  HookList<NodePreHook> pre;
  HookList<NodePostHook> post;
};
// The one-output nodes of one op with several outputs (above).
struct NodeGroup {
  std::vector<std::weak_ptr<Node>> outputs;
  std::weak_ptr<Node> core;  // a custom Function's node (its backward runs the node hooks); else none
  // A front end's own: where each output sits among all the values its forward returned
  // (Python's Functions may return non-Tensors, which torch's node hooks see as None).
  std::vector<int> positions;
  int n_returned = 0;
};

struct Node : std::enable_shared_from_this<Node> {
  Node(std::string op_name, Shape out_shape, DType out_dtype);
  ~Node();  // iterative, so that freeing a very long chain cannot overflow the stack
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::string op;       // "matmul", "softmax", ...
  Shape out_shape;      // shape of the tensor this node produced
  DType out_dtype;
  std::vector<Edge> next;  // one per input
  BackwardFn backward;     // null once the graph has been freed
  bool saved_tensors = false;  // saved tensors when recorded: freed after one backward (above)
  Precision autocast = Precision::FP32;  // the forward's autocast setting: its backward runs under it
  Tensor grad;             // gradient of the output, accumulated during one backward pass
  std::shared_ptr<HookList<GradHook>> hooks;  // the output tensor's register_hook()s
  std::weak_ptr<TensorImpl> retained;         // set by retain_grad(): the output keeps its .grad
  std::shared_ptr<NodeHooks> node_hooks;      // grad_fn.register_prehook / register_hook
  std::shared_ptr<NodeGroup> group;           // its siblings, for an output of a multi-output op
  bool runs_own_node_hooks = false;           // a custom Function's core: its backward runs them
  // Anomaly mode only: where the node was recorded (the op's source line and the
  // AnomalyScope label) and the stack of the forward call.
  std::string anomaly_trace;
  std::shared_ptr<const ForwardStack> forward_stack;

  static int64_t live_count();  // nodes alive in this process, for leak tests
};

// ---- recording --------------------------------------------------------------------------------

// True when grad mode is on and at least one input requires grad.
bool should_record(std::initializer_list<const Tensor*> inputs);
bool should_record(const std::vector<Tensor>& inputs);

// Where record() was called. The fields of std::source_location, filled by the builtins that
// GCC and clang share: clang 14 (the fuzzing build) has no std::source_location with libstdc++ 12.
// As a default argument they take the caller's place, as std::source_location::current() does.
struct SourceLocation {
  const char* file;
  int line;
  const char* function;
};

// Attaches a node to `out` (which must be freshly produced by the op) with edges to `inputs`.
// Call only when should_record(...) is true. Returns out for convenience. `where` (the op's
// own line) is kept only in anomaly mode, beside the stack of the forward call.
Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward,
              SourceLocation where = {__builtin_FILE(), __builtin_LINE(), __builtin_FUNCTION()});

// A tensor a backward function needs. Save inputs with save(), the op's own output with
// save_output() (before record(); it keeps no reference to the node, so no cycle). Saving
// marks the node that record() makes next as one that saved tensors (freed after a backward).
// unpack() checks the storage version and returns
//   * GradMode off: the data, detached (what the fast kernels read);
//   * GradMode on (create_graph): the same data with its place in the graph (the leaf itself,
//     or a handle whose grad_fn is the input's node, or, for an output, the running node).
class SavedTensor {
 public:
  SavedTensor() = default;
  static SavedTensor save(const Tensor& t);
  static SavedTensor save_output(const Tensor& out);
  Tensor unpack() const;
  bool defined() const { return data_.defined(); }
  const Tensor& data() const { return data_; }  // detached; no version check

 private:
  Tensor data_;                       // detached handle on the same storage
  std::weak_ptr<TensorImpl> original_;  // the input saved: its node now names it in the version error
  std::shared_ptr<TensorImpl> leaf_;  // an input leaf that requires grad
  std::shared_ptr<Node> node_;        // an input's node
  bool is_output_ = false;
  uint64_t version_ = 0;
};

// ---- backward -----------------------------------------------------------------------------------

// torch.autograd.grad's keyword arguments, in torch's order and with torch's defaults (every
// field initialised, as BackwardOptions's in tensor.h):
//   grad(outputs, inputs, grad_outputs, {.retain_graph = true, .create_graph = true})
struct GradOptions {
  std::optional<bool> retain_graph{};  // keep the graph for another backward; default: create_graph
  bool create_graph = false;           // record the backward pass, so the result can be differentiated
  bool allow_unused = false;           // an input the outputs do not depend on gets an undefined Tensor
  bool materialize_grads = false;      // ... or zeros of its shape (implies allow_unused)
};

// torch.autograd.grad: the gradients of `outputs` (weighted by grad_outputs, default 1 for
// one-element outputs) with respect to `inputs`, returned without touching any .grad. An input
// the outputs do not depend on throws, unless allow_unused or materialize_grads.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const GradOptions& options = {});

// Registers a node hook (grad_fn.register_prehook / register_hook) on `hooks`, made on first use.
HookHandle add_node_pre_hook(std::shared_ptr<NodeHooks>& hooks, NodePreHook fn);
HookHandle add_node_post_hook(std::shared_ptr<NodeHooks>& hooks, NodePostHook fn);
// Runs them, in the order they were registered; a hook's replacement must match in count and
// shapes (throws naming the node otherwise).
Grads run_node_pre_hooks(const std::shared_ptr<NodeHooks>& hooks, Grads grad_outputs, const std::string& node);
Grads run_node_post_hooks(const std::shared_ptr<NodeHooks>& hooks, Grads grad_inputs, const Grads& grad_outputs,
                          const std::string& node);
// Makes the nodes of `outputs` (those that have one) siblings of one op, with `core` as the
// node that stands for the op (a custom Function's; null for a view op such as unbind).
void group_outputs(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& core = nullptr);

// For a backward function while it runs: will this backward pass use the gradient of its
// node's i-th input? False for an input that needs none, and, under grad() or
// backward(inputs=), for one through which none of the tensors asked for is reached (torch's
// task_should_compute_output, behind a custom Function's needs_input_grad). Throws outside a
// backward function.
bool backward_needs_input_grad(size_t i);

// torch.autograd.backward: Tensor::backward for several roots at once (grad_tensors as grad()'s
// grad_outputs).
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              const BackwardOptions& options = {});

// The nodes reachable from root, in topological order (root first); for graph export.
std::vector<Node*> topological_order(const Node* root);

// ---- diagnostics --------------------------------------------------------------------------------
using NodeGradObserver = std::function<void(const Node& node, const Tensor& grad_output)>;

// RAII: `fn` sees each node and its output's gradient during the backward passes run on this
// thread while the guard lives (before the node's backward runs).
class ObserveNodeGradsGuard {
 public:
  explicit ObserveNodeGradsGuard(NodeGradObserver fn);
  ~ObserveNodeGradsGuard();
  ObserveNodeGradsGuard(const ObserveNodeGradsGuard&) = delete;
  ObserveNodeGradsGuard& operator=(const ObserveNodeGradsGuard&) = delete;

 private:
  NodeGradObserver prev_;
};

// For study tools (`attograd explore`), which show what each node received and sent.
// `fn` sees each node right after its backward function ran, in the order the engine runs
// them: the gradient of its output and the gradients it returned for its inputs (one per
// input, undefined where none), before they are passed on. On this thread, while the guard lives.
using NodeBackwardObserver = std::function<void(const Node& node, const Tensor& grad_output, const Grads& input_grads)>;
class ObserveNodeBackwardGuard {
 public:
  explicit ObserveNodeBackwardGuard(NodeBackwardObserver fn);
  ~ObserveNodeBackwardGuard();
  ObserveNodeBackwardGuard(const ObserveNodeBackwardGuard&) = delete;
  ObserveNodeBackwardGuard& operator=(const ObserveNodeBackwardGuard&) = delete;

 private:
  NodeBackwardObserver prev_;
};

// `fn` sees each node as record() attaches it, with the op's output, its inputs (the forward
// values a study tool shows; the nodes keep neither) and where record() was called (which
// tells one op's backward formula in the source from another's). On this thread, while the
// guard lives; with none installed record() pays one null check.
using NodeRecordObserver =
    std::function<void(const Node& node, const Tensor& output, const std::vector<Tensor>& inputs, const SourceLocation& where)>;
class ObserveRecordGuard {
 public:
  explicit ObserveRecordGuard(NodeRecordObserver fn);
  ~ObserveRecordGuard();
  ObserveRecordGuard(const ObserveRecordGuard&) = delete;
  ObserveRecordGuard& operator=(const ObserveRecordGuard&) = delete;

 private:
  NodeRecordObserver prev_;
};

}  // namespace ag
