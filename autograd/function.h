// Custom autograd functions, as libtorch's torch::autograd::Function:
//
//   struct MyExp : ag::autograd::Function<MyExp> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       Tensor y = exp(x);
//       ctx->save_for_backward({y});
//       return y;
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
//       Tensor y = ctx->get_saved_variables()[0];
//       return {grad_outputs[0] * y};
//     }
//   };
//   Tensor y = MyExp::apply(x);
//
// An output returned twice is one tensor, as torch's: the second place gets no gradient of its own.
// forward takes the context, then any arguments: Tensors, std::vector<Tensor>s and other values
// (a double, a flag); it runs with grad mode off, so nothing inside it is recorded. It returns
// one Tensor, or a std::vector<Tensor> for several outputs (apply then returns the vector).
// backward gets one gradient per output (zeros for an output that got none, unless
// set_materialize_grads(false): then an undefined Tensor) and returns one gradient per forward
// argument (a std::vector<Tensor> argument counts as one argument per element, as libtorch's
// TensorList): the input's gradient, or an undefined Tensor for none (always for a non-Tensor
// argument). A gradient of a broadcastable shape is summed to the input's shape, as torch's; a
// wrong count, a gradient for a non-Tensor argument or an incompatible shape throws libtorch's
// message naming the function. (Several outputs: see function.cpp for how they are recorded.)
//
// backward runs with grad mode on exactly when the backward pass is recorded (create_graph):
// written with the ops of ops.h, it is then differentiated again, so double backward works; the
// saved variables come back with their place in the graph (an input as itself, an output as the
// function's output). Each saved variable is version-checked like every SavedTensor: an in-place
// write to it between forward and backward makes get_saved_variables() throw. Without
// retain_graph, a function that saved variables frees them after its backward, and a second
// backward through it throws, as torch's.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ivalue.h"

namespace ag::autograd {

namespace detail {
struct FunctionState;
}
template <class T> struct Function;

using IndexRange = std::pair<size_t, size_t>;  // [begin, end) of Tensor inputs, as libtorch's

// What forward hands to backward (torch::autograd::AutogradContext).
class AutogradContext {
 public:
  // In forward: tensors backward needs (inputs, outputs, or tensors made in forward).
  void save_for_backward(std::vector<Tensor> to_save);
  // In backward: the tensors saved, in order. Throws if one was modified in place since.
  // (After forward, outside backward: their values, detached, as torch lets a stashed ctx read them.)
  std::vector<Tensor> get_saved_variables() const;
  // In forward: these outputs get no gradient (their requires_grad is false); backward sees
  // zeros (or undefined) for them.
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  // false: backward gets an undefined Tensor, not zeros, for an output that got no gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // In forward: these inputs were modified in place and are returned as outputs. Each returned
  // one is the input itself, its history rewritten to go through this function (as an in-place
  // op's: a view's base takes the new history; a leaf that requires grad throws torch's message).
  void mark_dirty(const std::vector<Tensor>& inputs);
  // Does the i-th Tensor input (counted among the Tensor inputs only, as libtorch's) need a
  // gradient? In backward: will this backward pass use it, as torch's (false for an input that
  // does not require grad, and, under grad() or backward(inputs=), for one that leads to none of
  // the tensors asked for). In forward: does it require grad (in grad mode).
  bool needs_input_grad(size_t index) const;
  // Does any input in these [begin, end) ranges need one (libtorch's IndexRange form)?
  bool needs_input_grad(std::initializer_list<IndexRange> ranges) const;

  // Anything else backward needs: ctx->saved_data["scale"] = 2.5; ... .toDouble().
  std::unordered_map<std::string, IValue> saved_data;

 private:
  friend struct detail::FunctionState;
  template <class T> friend struct Function;
  std::vector<Tensor> to_save_;  // until forward returns
  struct Saved {
    SavedTensor tensor;
    int output = -1;  // the index of the output it is, for a function with several outputs
  };
  std::vector<Saved> saved_;
  bool in_backward_ = false;
  bool materialize_grads_ = true;
  std::unordered_set<const TensorImpl*> non_differentiable_;
  std::vector<Tensor> dirty_;
  std::vector<bool> needs_input_grad_;
  std::weak_ptr<detail::FunctionState> state_;
};

namespace detail {

// A function pointer for Function<T>; a closure for a front end whose Functions are objects of
// its own language (the Python package's autograd.Function).
using UserBackward = std::function<std::vector<Tensor>(AutogradContext*, std::vector<Tensor>)>;

// "MyExp" from typeid(MyExp).name().
std::string demangle(const char* mangled);

// The forward arguments flattened: the Tensors, and per argument whether it is one.
struct Arguments {
  std::vector<Tensor> tensors;
  std::vector<bool> is_tensor;
  void add(const Tensor& t) {
    tensors.push_back(t);
    is_tensor.push_back(true);
  }
  void add(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) add(t);
  }
  template <class T> void add(const T&) { is_tensor.push_back(false); }
};

// After forward: makes the function's node(s) and attaches them to the outputs.
std::vector<Tensor> attach(const std::string& name, std::shared_ptr<AutogradContext> ctx, std::vector<Tensor> outputs,
                           const Arguments& args, UserBackward backward);

}  // namespace detail

template <class T>
struct Function {
  // The names a libtorch Function uses unqualified inside its body.
  using AutogradContext = ag::autograd::AutogradContext;
  using variable_list = std::vector<Tensor>;

  template <class... Args>
  static auto apply(Args&&... args) {
    using Out = decltype(T::forward(std::declval<AutogradContext*>(), std::forward<Args>(args)...));
    static_assert(std::is_same_v<Out, Tensor> || std::is_same_v<Out, std::vector<Tensor>>,
                  "Function: forward must return a Tensor or a std::vector<Tensor>");
    static_assert(std::is_same_v<decltype(T::backward(std::declval<AutogradContext*>(), std::declval<std::vector<Tensor>>())),
                                 std::vector<Tensor>>,
                  "Function: backward must be static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor>)");
    static const std::string name = detail::demangle(typeid(T).name());
    detail::Arguments arguments;
    (arguments.add(args), ...);
    auto ctx = std::make_shared<AutogradContext>();
    for (const Tensor& t : arguments.tensors) ctx->needs_input_grad_.push_back(GradMode::enabled() && t.requires_grad());
    Out out;
    {
      NoGradGuard no_grad;  // forward is not recorded: the function is one node
      out = T::forward(ctx.get(), std::forward<Args>(args)...);
    }
    std::vector<Tensor> outs;
    if constexpr (std::is_same_v<Out, Tensor>) outs.push_back(std::move(out));
    else outs = std::move(out);
    outs = detail::attach(name, std::move(ctx), std::move(outs), arguments, &T::backward);
    if constexpr (std::is_same_v<Out, Tensor>) return outs[0];
    else return outs;
  }
};

}  // namespace ag::autograd
