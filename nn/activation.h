// Parameter-free modules: the activations (ReLU, Tanh, Sigmoid, SiLU, GELU), Identity, and
// Dropout (active in training mode only). Each is its op as a module, for Sequential.
#pragma once
#include "autograd/ops.h"
#include "nn/module.h"

namespace ag::nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) const override { return relu(x); }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) const override { return tanh(x); }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) const override { return sigmoid(x); }
};

class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) const override { return silu(x); }
};

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) const override { return x; }
};

class GELU : public Module {
 public:
  explicit GELU(bool approximate_tanh = false) : approximate(approximate_tanh) {}
  Tensor forward(const Tensor& x) const override { return gelu(x, approximate); }
  bool approximate;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator& gen = default_generator()) : p(p), gen_(&gen) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("Dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  Tensor forward(const Tensor& x) const override { return dropout(x, p, is_training(), *gen_); }
  double p;

 private:
  Generator* gen_;
};

}  // namespace ag::nn
