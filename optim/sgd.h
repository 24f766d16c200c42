// SGD, torch.optim.SGD's update (maximize and the foreach/fused switches aside). Per element,
// with g the gradient and w the parameter:
//   g ← g + weight_decay·w                                  (when weight_decay ≠ 0)
//   b ← g on the first step, else momentum·b + (1 − dampening)·g   (when momentum ≠ 0)
//   g ← g + momentum·b  with nesterov, else  g ← b
//   w ← w − lr·g
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
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

  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("momentum", o.momentum), f("dampening", o.dampening), f("weight_decay", o.weight_decay);
    f("nesterov", o.nesterov);
  }
};

struct SGDParamState {
  Tensor momentum_buffer;  // undefined when momentum is 0 (torch: None)
};

class SGD : public OptimizerBase<SGDOptions, SGDParamState> {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  explicit SGD(std::vector<ParamGroup> groups);
  void step() override;

 protected:
  void check_options(const SGDOptions& o) const override;
  std::map<std::string, Tensor> state_to_map(const SGDParamState& s) const override;
  SGDParamState state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const override;
};

}  // namespace ag::optim
