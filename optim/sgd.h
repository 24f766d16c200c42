// SGD, torch.optim.SGD's update (maximize and the foreach/fused switches aside). Per element,
// with g the gradient and w the parameter:
//   g ← g + weight_decay·w                                  (when weight_decay ≠ 0)
//   b ← g on the first step, else momentum·b + (1 − dampening)·g   (when momentum ≠ 0)
//   g ← g + momentum·b  with nesterov, else  g ← b
//   w ← w − lr·g
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
//   optim::SGD opt2({{weights, {}}, {biases, {.lr = 0.01}}}, {.lr = 0.1, .momentum = 0.9});
#pragma once
#include "optim/optimizer.h"

namespace ag::optim {

// torch's keyword arguments, in torch's order, with torch's defaults.
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool operator==(const SGDOptions&) const = default;

  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("momentum", o.momentum), f("dampening", o.dampening), f("weight_decay", o.weight_decay);
    f("nesterov", o.nesterov);
  }
};

// A parameter group's own options (PartialParamGroup): each unset one is the optimizer's default.
struct SGDParamGroupOptions {
  std::optional<double> lr{};
  std::optional<double> momentum{};
  std::optional<double> dampening{};
  std::optional<double> weight_decay{};
  std::optional<bool> nesterov{};
  SGDOptions resolve(SGDOptions defaults) const {
    override_if(lr, defaults.lr);
    override_if(momentum, defaults.momentum);
    override_if(dampening, defaults.dampening);
    override_if(weight_decay, defaults.weight_decay);
    override_if(nesterov, defaults.nesterov);
    return defaults;
  }
};

struct SGDParamState {
  Tensor momentum_buffer;  // undefined when momentum is 0 (torch: None)
};

class SGD : public OptimizerBase<SGDOptions, SGDParamState, SGDParamGroupOptions> {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  explicit SGD(std::vector<ParamGroup> groups);
  SGD(std::vector<PartialParamGroup> groups, SGDOptions defaults);  // torch 2's groups and defaults
  using Optimizer::step;
  void step() override;

 protected:
  void check_options(const SGDOptions& o) const override;
  std::map<std::string, Tensor> state_to_map(const SGDParamState& s) const override;
  SGDParamState state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const override;
};

}  // namespace ag::optim
