// Several optimizers stepped as one over disjoint parameters, as the modded-nanogpt speedrun
// steps Muon for the hidden matrices beside AdamW for the rest:
//
//   std::vector<std::unique_ptr<optim::Optimizer>> parts;
//   parts.push_back(std::make_unique<optim::AdamW>(others, optim::AdamWOptions{.lr = 8e-3}));
//   parts.push_back(std::make_unique<optim::Muon>(matrices, optim::MuonOptions{.lr = 0.05}));
//   optim::CombinedOptimizer opt(std::move(parts));
//
// Its parameter groups are the parts' in order (group g of the whole is some part's group), so a
// scheduler made on it schedules every part's groups, each from its own initial_lr. Its state
// dict is the parts' joined: their param_groups one after the other and their parameters
// numbered on across them, the shape of one optimizer's, so that code which saves and restores
// an optimizer saves and restores it alike.
#pragma once
#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace ag::optim {

class CombinedOptimizer : public Optimizer {
 public:
  // At least one part; no parameter in two parts (std::invalid_argument otherwise).
  explicit CombinedOptimizer(std::vector<std::unique_ptr<Optimizer>> parts);

  using Optimizer::step;  // step(closure)
  void step() override;  // each part's, in order
  size_t num_param_groups() const override;
  const std::vector<Tensor>& group_params(size_t group) const override;
  double get_lr(size_t group) const override;
  void set_lr(size_t group, double lr) override;
  std::optional<double>& initial_lr(size_t group) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& sd) override;

  size_t num_parts() const { return parts_.size(); }
  Optimizer& part(size_t i) { return *parts_.at(i); }
  const Optimizer& part(size_t i) const { return *parts_.at(i); }

 private:
  std::pair<Optimizer*, size_t> locate(size_t group) const;  // the part holding `group`, and its index there
  std::vector<std::unique_ptr<Optimizer>> parts_;
};

}  // namespace ag::optim
