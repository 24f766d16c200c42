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
// public API bumps (Tensor::fill_, copy_, bump_version(); views and detach() share the
// storage, hence the counter). SavedTensor::save records the version; unpack() throws
// "modified by an inplace operation" naming the op, the shape and both versions. In grad mode
// an in-place write to a tensor that requires grad throws (attograd does not record in-place
// ops, so the written tensor's history would be wrong); under NoGradGuard it is allowed, as
// optimizers and initialisers need.
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
// Anomaly detection. Inside DetectAnomalyGuard each new node records where it was made: the
// op's own source location (captured by record(), as std::source_location would be) and the innermost
// AnomalyScope label the caller set (e.g. "block 1.attn"). We deliberately do not thread a
// std::source_location through every public op function: the inline operators (a * b) could
// not carry one, and the label says more about *which* use of an op than a line number does.
// When a backward function returns a NaN or an infinity, the engine throws naming the op, the
// input position and that place. Outside the guard nothing is captured or checked.
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
#include <string>
#include <string_view>
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
  Tensor grad;             // gradient of the output, accumulated during one backward pass
  std::shared_ptr<HookList<GradHook>> hooks;  // the output tensor's register_hook()s
  std::weak_ptr<TensorImpl> retained;         // set by retain_grad(): the output keeps its .grad
  std::string anomaly_trace;                  // where it was recorded; only in anomaly mode

  static int64_t live_count();  // nodes alive in this process, for leak tests
};

// Is the engine recording? Off inside NoGradGuard, and while backward functions run unless
// create_graph was asked for.
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

// RAII: recording on again (torch.enable_grad), e.g. for a function that calls ag::grad
// while its caller holds a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// ---- anomaly detection ------------------------------------------------------------------------
struct AnomalyMode {
  static bool enabled();
};

// RAII: anomaly mode on while it lives (torch.autograd.detect_anomaly).
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

// RAII: a label for the nodes recorded while it lives, shown by anomaly errors ("block 1.mlp").
// Scopes nest; the label is the innermost one. Outside anomaly mode it does nothing.
class AnomalyScope {
 public:
  explicit AnomalyScope(std::string_view label);
  ~AnomalyScope();
  AnomalyScope(const AnomalyScope&) = delete;
  AnomalyScope& operator=(const AnomalyScope&) = delete;

 private:
  bool active_;
};

// ---- recording --------------------------------------------------------------------------------

// True when grad mode is on and at least one input requires grad.
bool should_record(std::initializer_list<const Tensor*> inputs);
bool should_record(const std::vector<Tensor>& inputs);

// Attaches a node to `out` (which must be freshly produced by the op) with edges to `inputs`.
// Call only when should_record(...) is true. Returns out for convenience. `where` is kept
// only in anomaly mode.
// Where record() was called. The fields of std::source_location, filled by the builtins that
// GCC and clang share: clang 14 (the fuzzing build) has no std::source_location with libstdc++ 12.
// As a default argument they take the caller's place, as std::source_location::current() does.
struct SourceLocation {
  const char* file;
  int line;
  const char* function;
};

Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward,
              SourceLocation where = {__builtin_FILE(), __builtin_LINE(), __builtin_FUNCTION()});

// A tensor a backward function needs. Save inputs with save(), the op's own output with
// save_output() (before record(); it keeps no reference to the node, so no cycle).
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
  std::shared_ptr<TensorImpl> leaf_;  // an input leaf that requires grad
  std::shared_ptr<Node> node_;        // an input's node
  bool is_output_ = false;
  uint64_t version_ = 0;
};

// ---- backward -----------------------------------------------------------------------------------

// Backpropagates `grad_output` (shaped like `root`; undefined means 1 for a one-element root)
// through the graph that made `root`, in reverse topological order, visiting each node once,
// and accumulates into the leaves' .grad. Frees the graph unless retain_graph or create_graph.
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph, bool create_graph = false);

// torch.autograd.grad: the gradients of `outputs` (weighted by grad_outputs, default 1 for
// one-element outputs) with respect to `inputs`, returned without touching any .grad. The
// graph is kept when retain_graph or create_graph. An input the outputs do not depend on
// throws, unless allow_unused, which returns an undefined Tensor for it.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

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
