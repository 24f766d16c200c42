// The example's custom Function, in a header so that tests/examples/test_examples.cpp checks its values
// and derivatives against PyTorch 2's torch.nn.functional.softplus
// (tests/parity/make_examples_fixtures.py).
#pragma once
#include <vector>

#include "autograd/function.h"
#include "autograd/ops.h"

namespace custom_function {

using ag::Tensor;
using ag::autograd::AutogradContext;

// softplus(x) = log(1 + eˣ), computed as max(x, 0) + log(1 + e^−|x|) so that no eˣ overflows.
// Its derivative is sigmoid(x); the backward is written with ops, so it is differentiated again
// (its second derivative is sigmoid(x)·(1 − sigmoid(x))).
struct Softplus : ag::autograd::Function<Softplus> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x.relu() + (1.0 + (-x.abs()).exp()).log();  // grad mode is off here: one node
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * x.sigmoid()};  // d softplus / dx = sigmoid(x)
  }
};

}  // namespace custom_function
