// Optimizers over named parameters, with PyTorch's update rules:
//   AdamW  decoupled weight decay on parameters with ≥ 2 dims only (nanoGPT's grouping);
//   SGD    with momentum (first step: buf = g), optional L2 weight decay.
// The fused update loops run in the parameter's dtype with no allocation per step.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag::train {

using NamedParams = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  explicit Optimizer(NamedParams params);
  virtual ~Optimizer() = default;
  virtual void step() = 0;  // parameters without a gradient are skipped
  void zero_grad();
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  const NamedParams& params() const { return params_; }

 protected:
  NamedParams params_;
  double lr_ = 1e-3;
};

class AdamW : public Optimizer {
 public:
  AdamW(NamedParams params, double lr, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01);
  void step() override;
  bool decays(size_t i) const { return params_[i].second.dim() >= 2; }

  // State, saved for an exact resume: moments per parameter and the step count.
  int64_t step_count = 0;
  std::vector<Tensor> exp_avg, exp_avg_sq;
  double beta1, beta2, eps, weight_decay;
};

class SGD : public Optimizer {
 public:
  SGD(NamedParams params, double lr, double momentum = 0.0, double weight_decay = 0.0);
  void step() override;
  std::vector<Tensor> momentum_buffer;  // undefined until the first step
  double momentum, weight_decay;
};

// Scales all gradients so that their global L2 norm is at most max_norm (torch's
// clip_grad_norm_: coefficient max_norm / (norm + 1e-6), capped at 1). Returns the norm
// before clipping.
double clip_grad_norm(const NamedParams& params, double max_norm);

}  // namespace ag::train
