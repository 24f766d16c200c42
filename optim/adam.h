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
//
// Float32 parameters (without amsgrad, and for Adam without weight decay) are updated by
// kernels::vec::adamw_step in one parallel pass over all of them, cut at fixed offsets: the
// same bits on any thread count. That kernel writes the first moment as β1·m + (1 − β1)·g, so
// float32 can differ from torch in the last bit; float64 follows torch's kernels, fused
// multiply-adds included (within 2 ulp, equal on this project's machine: tests/test_optim_parity.cpp).
#pragma once
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
  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("betas", o.betas), f("eps", o.eps), f("weight_decay", o.weight_decay), f("amsgrad", o.amsgrad);
  }
};

struct AdamParamState {
  int64_t step = 0;  // this parameter's updates so far (torch keeps one per parameter)
  Tensor exp_avg, exp_avg_sq;
  Tensor max_exp_avg_sq;  // amsgrad only
};

// The update both share; Adam and AdamW differ in their options' default and in decoupled.
template <class Options>
class AdamFamily : public OptimizerBase<Options, AdamParamState> {
 public:
  using typename OptimizerBase<Options, AdamParamState>::ParamGroup;
  void step() override;

 protected:
  AdamFamily(const char* name, bool decoupled) : OptimizerBase<Options, AdamParamState>(name), decoupled_(decoupled) {}
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
};

class AdamW : public AdamFamily<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  explicit AdamW(std::vector<ParamGroup> groups);
};

extern template class AdamFamily<AdamOptions>;
extern template class AdamFamily<AdamWOptions>;

}  // namespace ag::optim
