// Muon (Keller Jordan 2024), torch.optim.Muon's update (torch ≥ 2.9), for 2-d parameters: the
// matrices of the hidden layers. Embeddings, the output head, gains and biases belong to an
// Adam(W) (train/optimizers/param_groups.h puts a model's parameters in the right one). Per parameter W
// (A rows, B columns) with gradient G, at learning rate lr:
//   M ← M + (1 − μ)(G − M)                      momentum buffer, torch's buf.lerp_(grad, 1 − μ)
//   U ← G + μ(M − G) with nesterov, else M      torch's grad.lerp(buf, μ)
//   O ← NS(U): X = U (Uᵀ when A > B) / max(‖U‖_F, eps), then ns_steps times
//        X ← aX + (bS + cS²)X, S = XXᵀ          (a, b, c) = ns_coefficients
//   W ← W·(1 − lr·weight_decay)                 decoupled weight decay, at the unadjusted lr
//   W ← W − lr·r·O                              r = √max(1, A/B) ("original", the default),
//                                               0.2·√max(A, B) ("match_rms_adamw"), √(A/B)
//                                               ("spectral_unclamped")
// The Newton–Schulz iteration runs on GEMMs (cblas) in the parameter's dtype; torch's casts to
// bfloat16 first (tests/optim/test_muon.cpp compares float64 updates with torch's iteration in float64,
// and float32 ones with torch's own, bfloat16, within its rounding).
//
//   optim::Muon opt(matrices, {.lr = 0.02});
#pragma once
#include <string>
#include <optional>
#include <tuple>

#include "optim/optimizer.h"

namespace ag::optim {

// torch's keyword arguments, in torch's order, with torch's defaults.
struct MuonOptions {
  double lr = 1e-3;
  double weight_decay = 0.1;
  double momentum = 0.95;
  bool nesterov = true;
  std::tuple<double, double, double> ns_coefficients = {3.4445, -4.7750, 2.0315};
  double eps = 1e-7;
  int64_t ns_steps = 5;
  std::string adjust_lr_fn = "";  // "" (torch's None) or "original", "match_rms_adamw", "spectral_unclamped"
  bool operator==(const MuonOptions&) const = default;

  // Every option under torch's name (optim/state_dict.h: the state dict's param_groups).
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr), f("weight_decay", o.weight_decay), f("momentum", o.momentum), f("nesterov", o.nesterov);
    f("ns_coefficients", o.ns_coefficients), f("eps", o.eps), f("ns_steps", o.ns_steps), f("adjust_lr_fn", o.adjust_lr_fn);
  }
};

// A parameter group's own options (PartialParamGroup): each unset one is the optimizer's default.
struct MuonParamGroupOptions {
  std::optional<double> lr{};
  std::optional<double> weight_decay{};
  std::optional<double> momentum{};
  std::optional<bool> nesterov{};
  std::optional<std::tuple<double, double, double>> ns_coefficients{};
  std::optional<double> eps{};
  std::optional<int64_t> ns_steps{};
  std::optional<std::string> adjust_lr_fn{};
  MuonOptions resolve(MuonOptions defaults) const {
    override_if(lr, defaults.lr);
    override_if(weight_decay, defaults.weight_decay);
    override_if(momentum, defaults.momentum);
    override_if(nesterov, defaults.nesterov);
    override_if(ns_coefficients, defaults.ns_coefficients);
    override_if(eps, defaults.eps);
    override_if(ns_steps, defaults.ns_steps);
    override_if(adjust_lr_fn, defaults.adjust_lr_fn);
    return defaults;
  }
};

struct MuonParamState {
  Tensor momentum_buffer;
};

class Muon : public OptimizerBase<MuonOptions, MuonParamState, MuonParamGroupOptions> {
 public:
  explicit Muon(std::vector<Tensor> params, MuonOptions options = {});
  explicit Muon(std::vector<ParamGroup> groups);
  Muon(std::vector<PartialParamGroup> groups, MuonOptions defaults);  // torch 2's groups and defaults
  using Optimizer::step;
  void step() override;

 protected:
  void check_options(const MuonOptions& o) const override;
  std::map<std::string, Tensor> state_to_map(const MuonParamState& s) const override;
  MuonParamState state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const override;

 private:
  void check_matrices() const;  // torch's refusal of a parameter that is not 2-d
};

// NS(U) of the update above: the orthogonalised (A, B) matrix, in U's dtype. For tests and tools.
Tensor zeropower_via_newtonschulz(const Tensor& u, std::tuple<double, double, double> ns_coefficients = {3.4445, -4.7750, 2.0315},
                                  int64_t ns_steps = 5, double eps = 1e-7);

// The learning rate a parameter of shape (A, B) is updated with (the ratio r above).
double muon_adjusted_lr(double lr, const std::string& adjust_lr_fn, int64_t A, int64_t B);

}  // namespace ag::optim
