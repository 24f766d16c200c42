// The losses as modules, as torch.nn's: each holds its options (those of the function of
// nn/functional.h, torch's fields and defaults) and calls the function in forward(input,
// target); a class-weight tensor is registered as a buffer, as torch's.
//
//   nn::CrossEntropyLoss ce({.ignore_index = 0, .label_smoothing = 0.1});
//   Tensor loss = ce(logits, targets);               // or ce.forward(logits, targets)
//   nn::BCEWithLogitsLoss bce({.pos_weight = pw});
//
// They take two inputs, so Module's single-input forward is not theirs (it throws naming them).
#pragma once
#include "autograd/ops.h"
#include "nn/functional.h"
#include "nn/module.h"

namespace ag::nn {

using MSELossOptions = MSELossFuncOptions;
using L1LossOptions = L1LossFuncOptions;
using BCELossOptions = BinaryCrossEntropyFuncOptions;
using BCEWithLogitsLossOptions = BinaryCrossEntropyWithLogitsFuncOptions;
using NLLLossOptions = NLLLossFuncOptions;
using CrossEntropyLossOptions = CrossEntropyFuncOptions;

// One loss module: Options, and Fn, the function it calls.
template <class Options, Tensor (*Fn)(const Tensor&, const Tensor&, const Options&)>
class LossModule : public Module {
 public:
  explicit LossModule(Options opts = {}) : options(std::move(opts)) { register_weights(); }
  using Module::forward;
  Tensor forward(const Tensor& input, const Tensor& target) const { return Fn(input, target, options); }
  using Module::operator();
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }

  Options options;

 private:
  void register_weights() {
    if constexpr (requires { options.weight; }) register_buffer("weight", options.weight);
    if constexpr (requires { options.pos_weight; }) register_buffer("pos_weight", options.pos_weight);
  }
};

class MSELoss : public LossModule<MSELossOptions, mse_loss> {
 public:
  using LossModule::LossModule;
};
class L1Loss : public LossModule<L1LossOptions, l1_loss> {
 public:
  using LossModule::LossModule;
};
class BCELoss : public LossModule<BCELossOptions, functional::binary_cross_entropy> {
 public:
  using LossModule::LossModule;
};
class BCEWithLogitsLoss : public LossModule<BCEWithLogitsLossOptions, binary_cross_entropy_with_logits> {
 public:
  using LossModule::LossModule;
};
class NLLLoss : public LossModule<NLLLossOptions, nll_loss> {
 public:
  using LossModule::LossModule;
};
class CrossEntropyLoss : public LossModule<CrossEntropyLossOptions, cross_entropy> {
 public:
  using LossModule::LossModule;
};

}  // namespace ag::nn
