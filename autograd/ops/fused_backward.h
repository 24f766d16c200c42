// The backward of a fused op, with each derivative written once.
//
// A fused op (gelu_mlp, layer_norm, attention_probs, scaled_dot_product_attention,
// self_attention_qkv) has a forward kernel and a backward kernel, and a *definition*: the same
// function as a composition of differentiable ops (gelu_mlp's is linear(gelu(linear(x, W1, b1)),
// W2, b2)), which is also its reference in the tests. Its backward function calls
//
//   return fused_backward("gelu_mlp_backward", {x, w1, b1, w2, b2}, g, definition, [&] {
//     ... the backward kernel: the gradients of the inputs, undefined where not wanted ...
//   });
//
// Without create_graph that runs the kernel and returns its gradients: the training step pays
// nothing more. Under create_graph the kernel's gradients are recorded as the outputs of one
// node (PyTorch's gelu_mlp_backward, say) with edges to the inputs and to g, whose own backward
// is the vector–Jacobian product of those gradients. It is not written by hand: the engine
// derives it by running the definition again on the saved values and differentiating it twice
// (ag::grad with create_graph, on fresh leaves, so that the nested pass sees a graph of its own
// and never the caller's). That backward records itself the same way, so the gradient can be
// differentiated to any order. Memory: nothing more is saved than the inputs; the definition is
// only run when a recorded backward pass is itself differentiated.
//
// The definition must not call the op itself (its higher derivatives would recurse for ever).
// Element-wise and softmax-like backwards, whose second derivatives are one line, are instead
// ops of their own with a hand-written backward (tanh_backward, softmax_backward, ...: ops.h),
// as in PyTorch; the multi-output fused backwards here would need hand-derived Hessian terms per
// output (PyTorch's layer_norm_double_backward; its flash-attention backward has none).
#pragma once
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "autograd/engine.h"

namespace ag {

// A fused op's output as a composition of differentiable ops of its inputs (in the order given
// to fused_backward; an undefined input, e.g. a missing bias, stays undefined).
using FusedDefinition = std::function<Tensor(const std::vector<Tensor>& inputs)>;

namespace detail {
// fused_backward's recording step (fused_backward.cpp), for create_graph.
Grads record_fused_backward(const char* op, std::vector<Tensor> inputs, const Tensor& grad, FusedDefinition definition,
                            Grads grads);
}  // namespace detail

// `inputs`: the op's inputs as its backward function unpacked them (under create_graph they carry
// their place in the graph; an input whose value no gradient depends on, such as an output bias,
// may be passed detached). `grad`: the gradient of the op's output. `kernel()`: the gradients of
// the inputs, values only (it runs with grad mode off).
template <class Definition, class Kernel>
Grads fused_backward(const char* op, std::initializer_list<Tensor> inputs, const Tensor& grad,
                     const Definition& definition, Kernel&& kernel) {
  Grads grads;
  {
    NoGradGuard values_only;
    grads = std::forward<Kernel>(kernel)();
  }
  if (!GradMode::enabled()) return grads;  // no create_graph: the kernel's gradients are all
  return detail::record_fused_backward(op, std::vector<Tensor>(inputs), grad, FusedDefinition(definition),
                                       std::move(grads));
}

}  // namespace ag
