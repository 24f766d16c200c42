// Custom Functions (function.h): the node(s) a Function's outputs get, and the checks on what its
// backward returns.
//
// One output: one node, recorded on the output, whose backward function calls the user's.
// Several outputs: attograd's nodes have one output each, so the function is a node recorded on
// a 0-d placeholder (the "core": edges to the inputs; it holds the context) plus one node per
// differentiable output with an edge to the core. An output's node keeps the gradient it gets in
// the function's state and passes a 0-d zero on to the core, which runs once, after all of them
// (it lies below them in topological order), with every output's gradient.
#include "autograd/function.h"

#include <cxxabi.h>

#include <cstdlib>

#include "autograd/inplace_history.h"
#include "autograd/ops.h"

namespace ag::autograd {

namespace detail {

std::string demangle(const char* mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && out ? out : mangled;
  std::free(out);
  return name;
}

// What a function's nodes share. The core's backward function holds it; the output nodes and
// the context only refer to it, so it dies with the core's backward function (no cycle).
struct FunctionState : std::enable_shared_from_this<FunctionState> {
  std::string name;
  std::shared_ptr<AutogradContext> ctx;
  UserBackward backward = nullptr;
  std::vector<bool> arg_is_tensor;
  std::vector<Shape> input_shapes;  // per Tensor argument
  std::vector<DType> input_dtypes;
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<bool> output_differentiable;
  // Several outputs only: the output nodes and the gradients they got in this backward pass.
  std::vector<std::weak_ptr<Node>> output_nodes;
  std::vector<Tensor> output_grads;
  std::weak_ptr<Node> core;

  // The context's saved tensors as SavedTensors, before the core is recorded (so that the
  // engine counts them as the core's).
  static std::vector<Tensor> attach(const std::string& name, std::shared_ptr<AutogradContext> ctx,
                                    std::vector<Tensor> outputs, const Arguments& args, UserBackward backward);
  static void save(AutogradContext& ctx, const std::vector<Tensor>& returned, const std::vector<Tensor>& outputs);
  Grads run(std::vector<Tensor> grad_outputs);
  Grads check_gradients(std::vector<Tensor> grads) const;
  std::shared_ptr<Node> make_output_node(const std::shared_ptr<Node>& core_node, size_t i);
  Tensor output_handle(const Tensor& data, size_t i);
};

void FunctionState::save(AutogradContext& ctx, const std::vector<Tensor>& returned, const std::vector<Tensor>& outputs) {
  for (const Tensor& t : ctx.to_save_) {
    int output = -1;
    for (size_t j = 0; j < returned.size() && output < 0; ++j)
      if (t.defined() && t.same(returned[j])) output = static_cast<int>(j);
    if (output < 0) ctx.saved_.push_back({SavedTensor::save(t), -1});
    // An output is saved as data (a strong reference to its node would be a cycle) and gets its
    // place in the graph back when unpacked under create_graph.
    else ctx.saved_.push_back({SavedTensor::save_output(outputs[output]), outputs.size() > 1 ? output : -1});
  }
  ctx.to_save_.clear();
}

Grads FunctionState::run(std::vector<Tensor> grad_outputs) {
  // Several outputs: the core stands for torch's one node, so its node hooks see them all.
  const std::shared_ptr<Node> core_node = output_nodes.empty() ? nullptr : core.lock();
  const bool own_hooks = core_node && core_node->node_hooks;
  if (own_hooks) grad_outputs = run_node_pre_hooks(core_node->node_hooks, std::move(grad_outputs), name);
  const std::vector<Tensor> given = own_hooks ? grad_outputs : std::vector<Tensor>{};
  for (size_t i = 0; i < grad_outputs.size(); ++i)
    if (!grad_outputs[i].defined() && ctx->materialize_grads_)
      grad_outputs[i] = Tensor::zeros(output_shapes[i], output_dtypes[i]);
  ctx->in_backward_ = true;
  std::vector<Tensor> grads;
  try {
    grads = backward(ctx.get(), std::move(grad_outputs));
  } catch (...) {
    ctx->in_backward_ = false;
    throw;
  }
  ctx->in_backward_ = false;
  Grads out = check_gradients(std::move(grads));
  if (own_hooks) out = run_node_post_hooks(core_node->node_hooks, std::move(out), given, name);
  return out;
}

// libtorch's checks (CppNode::apply and validate_outputs), with its messages.
Grads FunctionState::check_gradients(std::vector<Tensor> grads) const {
  const size_t n_args = arg_is_tensor.size();
  if (grads.size() > n_args) {  // more is fine when the extra ones are all undefined
    bool extra_defined = false;
    for (size_t i = n_args; i < grads.size(); ++i) extra_defined |= grads[i].defined();
    if (!extra_defined) grads.resize(n_args);
  }
  if (grads.size() != n_args)
    throw std::runtime_error("function " + name + " returned an incorrect number of gradients (expected " +
                             std::to_string(n_args) + ", got " + std::to_string(grads.size()) + ")");
  Grads out;
  for (size_t i = 0, t = 0; i < n_args; ++i) {
    Tensor g = std::move(grads[i]);
    if (!arg_is_tensor[i]) {
      if (g.defined())
        throw std::runtime_error("function " + name + " returned a gradient that is defined at position " +
                                 std::to_string(i + 1) + ", but the corresponding forward input was not a Tensor");
      continue;
    }
    const Shape& shape = input_shapes[t];
    if (g.defined() && g.shape() != shape) {
      // The input may have been broadcast in forward: a gradient it expands to is summed back.
      bool expandable = g.dim() >= static_cast<int64_t>(shape.size());
      for (size_t k = 0; expandable && k < shape.size(); ++k) {
        const int64_t want = shape[shape.size() - 1 - k], got = g.shape()[g.shape().size() - 1 - k];
        expandable = want == got || want == 1;
      }
      if (!expandable)
        throw std::runtime_error("Function " + name + " returned an invalid gradient at index " + std::to_string(t) +
                                 " - got " + shape_str(g.shape()) + " but expected shape compatible with " +
                                 shape_str(shape));
      g = sum_to(g, shape);
    }
    if (g.defined() && g.dtype() != input_dtypes[t]) g = g.to(input_dtypes[t]);
    out.push_back(std::move(g));
    ++t;
  }
  return out;
}

std::shared_ptr<Node> FunctionState::make_output_node(const std::shared_ptr<Node>& core_node, size_t i) {
  auto node = std::make_shared<Node>(name, output_shapes[i], output_dtypes[i]);
  node->next.push_back(Edge{core_node, nullptr});
  node->anomaly_trace = core_node->anomaly_trace;
  node->forward_stack = core_node->forward_stack;
  // out_i's gradient goes to the state; the core gets a 0-d zero, only so that it runs.
  node->backward = [state = weak_from_this(), i, dtype = core_node->out_dtype](const Tensor& g) {
    if (auto s = state.lock()) s->output_grads[i] = g;
    return Grads{Tensor::zeros({}, dtype)};
  };
  output_nodes[i] = node;
  return node;
}

// Output i's value with its place in the graph: its node if alive, else a node made again (the
// output tensor was dropped, but a recorded backward pass still depends on it).
Tensor FunctionState::output_handle(const Tensor& data, size_t i) {
  if (!output_differentiable[i]) return data;
  std::shared_ptr<Node> node = output_nodes[i].lock();
  if (!node) {
    std::shared_ptr<Node> core_node = core.lock();
    if (!core_node) throw std::logic_error("function " + name + ": an output was unpacked outside its backward");
    node = make_output_node(core_node, i);
  }
  auto impl = std::make_shared<TensorImpl>(data.impl());  // same storage and view; no hooks or grad
  impl->grad_fn = std::move(node);
  impl->requires_grad = true;
  return Tensor(std::move(impl));
}

std::vector<Tensor> FunctionState::attach(const std::string& name, std::shared_ptr<AutogradContext> ctx,
                                          std::vector<Tensor> outputs, const Arguments& args, UserBackward backward) {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      throw std::invalid_argument("function " + name + ": forward returned an undefined Tensor as output " + std::to_string(i));
  if (outputs.empty()) throw std::invalid_argument("function " + name + ": forward returned no outputs");
  if (!should_record(args.tensors)) return outputs;

  auto state = std::make_shared<FunctionState>();
  state->name = name;
  state->ctx = ctx;
  state->backward = backward;
  state->arg_is_tensor = args.is_tensor;
  for (const Tensor& t : args.tensors) {
    state->input_shapes.push_back(t.shape());
    state->input_dtypes.push_back(t.dtype());
  }
  ctx->state_ = state;

  // An output that is an input, or a tensor with history of its own, becomes a fresh handle on
  // the same data, so that the function's node attaches to it alone; an input marked dirty takes
  // that history back afterwards (rebase_history). An output returned twice is the first one
  // again, as torch's: the node's place for the second gets no gradient.
  const std::vector<Tensor> returned = outputs;
  std::vector<int> first_of(outputs.size(), -1);
  std::vector<bool> dirty(outputs.size(), false);
  for (const Tensor& d : ctx->dirty_) {
    bool is_input = false, is_output = false;
    for (const Tensor& in : args.tensors) is_input |= d.same(in);
    for (const Tensor& out : returned) is_output |= d.same(out);
    if (!is_input)  // torch's message
      throw std::invalid_argument("function " + name + ": mark_dirty only accepts input tensors, but " + describe(d) +
                                  " isn't one");
    if (!is_output)
      throw std::invalid_argument("Some elements marked as dirty during the forward method were not returned as output. "
                                  "The inputs that are modified inplace must all be outputs of the Function. (function " +
                                  name + ")");
    if (d.is_leaf() && d.requires_grad())  // torch's message
      throw std::runtime_error("a leaf Variable that requires grad has been used in an in-place operation. (function " +
                               name + ")");
    if (d.is_view() && outputs.size() > 1)
      throw std::runtime_error("Functions which modify views in-place must return only one output (function " + name + ")");
  }
  bool any_differentiable = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    for (size_t j = 0; j < i && first_of[i] < 0; ++j)
      if (out.same(returned[j])) first_of[i] = static_cast<int>(j);
    for (const Tensor& d : ctx->dirty_) dirty[i] = dirty[i] || out.same(d);
    bool alias = out.requires_grad() || out.grad_fn() != nullptr;
    for (const Tensor& in : args.tensors) alias |= out.same(in);
    if (alias || first_of[i] >= 0) out = out.detach();
    state->output_shapes.push_back(out.shape());
    state->output_dtypes.push_back(out.dtype());
    const bool diff = is_floating(out.dtype()) && !ctx->non_differentiable_.count(returned[i].impl_ptr().get());
    state->output_differentiable.push_back(diff);
    any_differentiable |= diff;
  }
  ctx->dirty_.clear();
  // Each dirty input takes its output's history; each duplicate is the first tensor again.
  auto finish = [&](std::vector<Tensor>& outs) {
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!dirty[i] || first_of[i] >= 0) continue;
      if (outs[i].requires_grad()) rebase_history(returned[i], outs[i]);
      outs[i] = returned[i];
    }
    for (size_t i = 0; i < outs.size(); ++i)
      if (first_of[i] >= 0) outs[i] = outs[static_cast<size_t>(first_of[i])];
    return outs;
  };
  if (!any_differentiable) {
    ctx->to_save_.clear();
    return finish(outputs);
  }
  save(*ctx, returned, outputs);
  if (outputs.size() == 1) {
    record(outputs[0], name.c_str(), args.tensors, [state](const Tensor& g) { return state->run({g}); });
    state->core = outputs[0].grad_fn();
    return finish(outputs);
  }
  state->output_nodes.resize(outputs.size());
  state->output_grads.resize(outputs.size());
  Tensor placeholder = Tensor::zeros({}, outputs[0].dtype());
  record(placeholder, name.c_str(), args.tensors, [state](const Tensor&) {
    std::vector<Tensor> grads = std::move(state->output_grads);
    state->output_grads.assign(grads.size(), Tensor());
    return state->run(std::move(grads));
  });
  const std::shared_ptr<Node> core_node = placeholder.grad_fn();
  state->core = core_node;
  core_node->runs_own_node_hooks = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!state->output_differentiable[i] || first_of[i] >= 0) continue;
    outputs[i].impl().grad_fn = state->make_output_node(core_node, i);
    outputs[i].impl().requires_grad = true;
  }
  group_outputs(outputs, core_node);
  return finish(outputs);
}

std::vector<Tensor> attach(const std::string& name, std::shared_ptr<AutogradContext> ctx, std::vector<Tensor> outputs,
                           const Arguments& args, UserBackward backward) {
  return FunctionState::attach(name, std::move(ctx), std::move(outputs), args, backward);
}

}  // namespace detail

void AutogradContext::save_for_backward(std::vector<Tensor> to_save) {
  if (in_backward_ || !saved_.empty())
    throw std::logic_error("save_for_backward: call it in forward");
  to_save_ = std::move(to_save);
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  // In forward the tensors are not saved yet (torch's): forward has them itself.
  if (!to_save_.empty()) throw std::logic_error("get_saved_variables: call it in backward (forward has the tensors themselves)");
  std::vector<Tensor> out;
  for (const Saved& s : saved_) {
    if (!in_backward_) {  // after forward, outside the backward pass: their values, as torch gives them
      out.push_back(s.tensor.data());
      continue;
    }
    if (s.output < 0 || !GradMode::enabled()) {
      out.push_back(s.tensor.unpack());
      continue;
    }
    Tensor data;
    {
      NoGradGuard plain;  // version-checked data; its place in the graph is the output's node
      data = s.tensor.unpack();
    }
    out.push_back(state_.lock()->output_handle(data, static_cast<size_t>(s.output)));
  }
  return out;
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(t);
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.insert(t.impl_ptr().get());
}

bool AutogradContext::needs_input_grad(size_t index) const {
  if (index >= needs_input_grad_.size())
    throw std::out_of_range("needs_input_grad: index " + std::to_string(index) + " but the function has " +
                            std::to_string(needs_input_grad_.size()) + " Tensor inputs");
  // In backward, the node's edges are the Tensor inputs, in order.
  return in_backward_ ? backward_needs_input_grad(index) : needs_input_grad_[index];
}

bool AutogradContext::needs_input_grad(std::initializer_list<IndexRange> ranges) const {
  for (const IndexRange& r : ranges)
    for (size_t i = r.first; i < r.second; ++i)
      if (needs_input_grad(i)) return true;
  return false;
}

}  // namespace ag::autograd
