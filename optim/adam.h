// Adam and AdamW, torch.optim.Adam / torch.optim.AdamW's update (maximize and the
// foreach/fused/capturable switches aside). Per element, at the parameter's step t:
//   Adam:   g ← g + weight_decay·w                 (L2 penalty, folded into the gradient)
//   AdamW:  w ← w·(1 − lr·weight_decay)            (decoupled decay, on every parameter of the group)
//   m ← m + (1 − β1)(g − m)        v ← β2·v + (1 − β2)·g²        (v̂ ← max(v̂, v) with amsgrad)
//   w ← w − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps)
// The only difference between the two is that weight decay: AdamW's default is 1e-2 and it
// decays every parameter of its group. To leave biases and norms undecayed, as nanoGPT does,
// put them in a group with weight_decay 0:
//
//   optim::AdamW opt({{matrices, {.lr = 1e-3, .weight_decay = 0.1}},
//                     {vectors, {.lr = 1e-3, .weight_decay = 0.0}}});
//   optim::AdamW same({{matrices, {}}, {vectors, {.weight_decay = 0.0}}}, {.lr = 1e-3, .weight_decay = 0.1});
//
// Float32 parameters (without amsgrad, and for Adam without weight decay) are updated by
// kernels::vec::adamw_step in one parallel pass over all of them, cut at fixed offsets: the
// same bits on any thread count. That kernel writes the first moment as β1·m + (1 − β1)·g, so
// float32 can differ from torch in the last bit; float64 follows torch's kernels, fused
// multiply-adds included (within 2 ulp, equal on this project's machine: tests/optim/test_optim_parity.cpp).
#pragma once
#include <optional>
#include <tuple>

#include "optim/optimizer.h"

namespace ag::optim {

// torch's keyword arguments, in torch's order, with torch's defaults.
struct AdamOptions {
  double lr = 1e-3;
  std::tuple<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
  bool operator==(const AdamOptions&) const = default;
  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("betas", o.betas), f("eps", o.eps), f("weight_decay", o.weight_decay), f("amsgrad", o.amsgrad);
  }
};

struct AdamWOptions {
  double lr = 1e-3;
  std::tuple<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool operator==(const AdamWOptions&) const = default;
  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("betas", o.betas), f("eps", o.eps), f("weight_decay", o.weight_decay), f("amsgrad", o.amsgrad);
  }
};

// A parameter group's own options for Adam and AdamW (PartialParamGroup): each unset one is
// the optimizer's default.
struct AdamParamGroupOptions {
  std::optional<double> lr{};
  std::optional<std::tuple<double, double>> betas{};
  std::optional<double> eps{};
  std::optional<double> weight_decay{};
  std::optional<bool> amsgrad{};
  template <class Options>
  Options resolve(Options defaults) const {
    override_if(lr, defaults.lr);
    override_if(betas, defaults.betas);
    override_if(eps, defaults.eps);
    override_if(weight_decay, defaults.weight_decay);
    override_if(amsgrad, defaults.amsgrad);
    return defaults;
  }
};
using AdamWParamGroupOptions = AdamParamGroupOptions;

struct AdamParamState {
  int64_t step = 0;  // this parameter's updates so far (torch keeps one per parameter)
  Tensor exp_avg, exp_avg_sq;
  Tensor max_exp_avg_sq;  // amsgrad only
};

// The update both share; Adam and AdamW differ in their options' default and in decoupled.
template <class Options>
class AdamFamily : public OptimizerBase<Options, AdamParamState, AdamParamGroupOptions> {
  using Base = OptimizerBase<Options, AdamParamState, AdamParamGroupOptions>;

 public:
  using typename Base::ParamGroup;
  using typename Base::PartialParamGroup;
  using Optimizer::step;
  void step() override;

 protected:
  AdamFamily(const char* name, bool decoupled) : Base(name), decoupled_(decoupled) {}
  void check_options(const Options& o) const override;
  std::map<std::string, Tensor> state_to_map(const AdamParamState& s) const override;
  AdamParamState state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const override;

 private:
  bool decoupled_;
};

class Adam : public AdamFamily<AdamOptions> {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  explicit Adam(std::vector<ParamGroup> groups);
  Adam(std::vector<PartialParamGroup> groups, AdamOptions defaults);  // torch 2's groups and defaults
};

class AdamW : public AdamFamily<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  explicit AdamW(std::vector<ParamGroup> groups);
  AdamW(std::vector<PartialParamGroup> groups, AdamWOptions defaults);  // torch 2's groups and defaults
};

extern template class AdamFamily<AdamOptions>;
extern template class AdamFamily<AdamWOptions>;

}  // namespace ag::optim
