// Function transforms, as torch.autograd.functional: vjp, jvp, jacobian, hessian, hvp, vhp.
//
// Each takes a callable and the point: `Tensor(const Tensor&)` with one input Tensor, or
// `Tensor(const std::vector<Tensor>&)` with a vector of inputs (the results then hold one entry
// per input, as torch's tuples); then `v` where torch takes one; then the options by name:
//
//   auto [y, vjp] = functional::vjp(f, x, v);
//   Tensor J = functional::jacobian(f, x);                    // (c, a, b) for f: R^(a,b) -> R^(c)
//   Tensor H = functional::hessian(f, x, {.create_graph = true});
//   auto [y, hv] = functional::hvp(f, xs, vs, {.strict = true});
//
// The semantics are torch's, built the same way on grad(): the callable runs with grad mode on,
// on fresh tensors that require grad (so only what it does to its argument counts); jvp and hvp
// use the double-backward trick; an input the output does not depend on gets zeros, or, with
// strict, throws torch's message; without create_graph every result is detached.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag::autograd::functional {

// torch's keyword arguments, with torch's defaults.
struct FunctionalOptions {
  bool create_graph = false;  // the results are differentiable (their graph is recorded)
  bool strict = false;        // an input every output is independent of throws instead of zeros
};

using Fn = std::function<Tensor(const Tensor&)>;
using FnN = std::function<Tensor(const std::vector<Tensor>&)>;

// (f(x), vᵀ·J): v shaped like f(x), optional when f(x) has one element. vjp has x's shape.
std::pair<Tensor, Tensor> vjp(const Fn& func, const Tensor& input, const Tensor& v = {},
                              const FunctionalOptions& options = {});
std::pair<Tensor, std::vector<Tensor>> vjp(const FnN& func, const std::vector<Tensor>& inputs, const Tensor& v = {},
                                           const FunctionalOptions& options = {});

// (f(x), J·v): v shaped like x (one per input), optional when x is one element. jvp has f(x)'s shape.
std::pair<Tensor, Tensor> jvp(const Fn& func, const Tensor& input, const Tensor& v = {},
                              const FunctionalOptions& options = {});
std::pair<Tensor, Tensor> jvp(const FnN& func, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v = {},
                              const FunctionalOptions& options = {});

// ∂f/∂x, shaped f(x).shape + x.shape; per input for several inputs.
Tensor jacobian(const Fn& func, const Tensor& input, const FunctionalOptions& options = {});
std::vector<Tensor> jacobian(const FnN& func, const std::vector<Tensor>& inputs, const FunctionalOptions& options = {});

// ∂²f/∂x², shaped x.shape + x.shape, for f with one element; [i][j] = ∂²f/∂xᵢ∂xⱼ for several.
Tensor hessian(const Fn& func, const Tensor& input, const FunctionalOptions& options = {});
std::vector<std::vector<Tensor>> hessian(const FnN& func, const std::vector<Tensor>& inputs,
                                         const FunctionalOptions& options = {});

// (f(x), H·v) and (f(x), vᵀ·H) for f with one element; v shaped like x (one per input).
std::pair<Tensor, Tensor> hvp(const Fn& func, const Tensor& input, const Tensor& v = {},
                              const FunctionalOptions& options = {});
std::pair<Tensor, std::vector<Tensor>> hvp(const FnN& func, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, const FunctionalOptions& options = {});
std::pair<Tensor, Tensor> vhp(const Fn& func, const Tensor& input, const Tensor& v = {},
                              const FunctionalOptions& options = {});
std::pair<Tensor, std::vector<Tensor>> vhp(const FnN& func, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, const FunctionalOptions& options = {});

}  // namespace ag::autograd::functional
