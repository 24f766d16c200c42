// Parameter-free modules: GELU and Dropout (active in training mode only).
#pragma once
#include "autograd/ops.h"
#include "nn/module.h"

namespace ag::nn {

class GELU : public Module {
 public:
  explicit GELU(bool approximate_tanh = false) : approximate(approximate_tanh) {}
  Tensor forward(const Tensor& x) const { return gelu(x, approximate); }
  Tensor operator()(const Tensor& x) const { return forward(x); }
  bool approximate;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator& gen = default_generator()) : p(p), gen_(&gen) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("Dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  Tensor forward(const Tensor& x) const { return dropout(x, p, is_training(), *gen_); }
  Tensor operator()(const Tensor& x) const { return forward(x); }
  double p;

 private:
  Generator* gen_;
};

}  // namespace ag::nn
