// The example's whole computation, in a header so that tests/examples/test_examples.cpp checks its
// losses against PyTorch 2's (tests/parity/make_examples_fixtures.py builds the same model, data
// and initial weights in torch).
//
// An MLP y = W2·tanh(W1·x + b1) + b2 fitted to y = x₀² − sin(x₁) on 32 points, with a gradient
// penalty as WGAN-GP's: λ·mean_i (‖∂y_i/∂x_i‖ − 1)². The penalty is a function of a gradient,
// so that gradient is computed with create_graph and the loss is differentiated through it.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/activation.h"
#include "nn/functional.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/adam.h"

namespace mlp_gradient_penalty {

using ag::DType;
using ag::Tensor;

inline constexpr int64_t kPoints = 32, kHidden = 16;
inline constexpr double kPenalty = 0.1;  // λ

// Deterministic values that torch can make too: 0.5·sin(1.7·k + phase), k = 0, 1, ...
inline Tensor waves(const ag::Shape& shape, double phase, double scale = 0.5) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * std::sin(1.7 * static_cast<double>(k) + phase);
  return Tensor::from_vector(v, shape, DType::Float64);
}

struct Data {
  Tensor x;  // (32, 2)
  Tensor y;  // (32, 1)
};

inline Data make_data() {
  Tensor x = waves({kPoints, 2}, 0.3, 2.0);                             // points in [-2, 2]²
  Tensor y = ag::narrow(x, 1, 0, 1).pow(2.0) - ag::sin(ag::narrow(x, 1, 1, 1));  // x₀² − sin(x₁)
  return {x, y};
}

// Linear(2, 16), Tanh, Linear(16, 1) in float64 with the deterministic weights above.
inline std::shared_ptr<ag::nn::Sequential> make_model() {
  auto model = std::make_shared<ag::nn::Sequential>(std::make_shared<ag::nn::Linear>(2, kHidden),
                                                    std::make_shared<ag::nn::Tanh>(),
                                                    std::make_shared<ag::nn::Linear>(kHidden, 1));
  model->to(DType::Float64);
  model->load_state_dict({{"0.weight", waves({kHidden, 2}, 0.0)},
                          {"0.bias", waves({kHidden}, 1.0, 0.1)},
                          {"2.weight", waves({1, kHidden}, 2.0, 0.25)},
                          {"2.bias", waves({1}, 3.0, 0.1)}});
  return model;
}

// mse + λ·mean((‖∂ŷ/∂x‖ − 1)²), differentiable in the parameters (create_graph).
inline Tensor loss_with_penalty(const ag::nn::Sequential& model, const Data& data) {
  Tensor x = data.x.detach().requires_grad_();
  Tensor pred = model.forward(x);                                                   // (32, 1)
  Tensor dpred_dx = ag::grad({pred.sum()}, {x}, {}, {.create_graph = true})[0];     // (32, 2)
  Tensor penalty = (dpred_dx.norm(2.0, {1}) - 1.0).pow(2.0).mean();
  return ag::nn::functional::mse_loss(pred, data.y) + penalty * kPenalty;
}

// `steps` Adam steps (lr 1e-2); calls `on_step(step, loss)` with each step's loss before its update.
inline void train(int64_t steps, const std::function<void(int64_t, double)>& on_step) {
  const Data data = make_data();
  auto model = make_model();
  ag::optim::Adam opt(model->parameters(), {.lr = 1e-2});
  for (int64_t step = 0; step < steps; ++step) {
    opt.zero_grad();
    Tensor loss = loss_with_penalty(*model, data);
    loss.backward();
    opt.step();
    on_step(step, loss.item());
  }
}

}  // namespace mlp_gradient_penalty
