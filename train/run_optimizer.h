// The optimizer of `attograd train`, as --optimizer names it:
//   adamw  nanoGPT's: AdamW over two groups, parameters of two or more dims decayed by
//          --weight-decay, the others not (train/param_groups.h);
//   muon   the modded-nanogpt speedrun's: Muon (momentum 0.95, Nesterov) for the hidden layers'
//          weight matrices at --muon-lr, AdamW for everything else (embeddings, the head, gains,
//          biases) at --lr, decayed as above, except the tables that are only looked up (an
//          untied token embedding), at --embed-lr when it is given. Both optimizers' decoupled
//          weight decay is --weight-decay (each multiplies it by its own learning rate).
// Which parameter goes where is the model's parameter table's (models/param_table.h): its
// Matrix rows to Muon, its Decay and NoDecay rows to AdamW's two groups (with --embed-lr, its
// lookup_tables() to a third).
// The schedule sets the learning rate of a step (set_lr, set_schedule_lr): AdamW's groups run
// at it, Muon's at muon_lr/lr times it (the tables' at embed_lr/lr times it), so that all follow
// the same shape; get_lr reports each group's own.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "optim/adam.h"
#include "optim/muon.h"

namespace ag::train {

struct TrainConfig;

class RunOptimizer : public optim::Optimizer {
 public:
  RunOptimizer(const models::LanguageModel& model, const TrainConfig& cfg);
  // "adamw" or "muon"; throws std::invalid_argument naming --optimizer otherwise.
  static void check_name(const std::string& name);

  void step() override;
  // Every group's learning rate for a step whose scheduled rate is lr.
  void set_schedule_lr(double lr);

  size_t num_param_groups() const override;
  const std::vector<Tensor>& group_params(size_t g) const override;
  double get_lr(size_t g) const override;
  void set_lr(size_t g, double lr) override;  // lr: the schedule's (a Muon group's is scaled)
  std::optional<double>& initial_lr(size_t g) override;

  optim::AdamW& adamw() { return *adamw_; }
  const optim::AdamW& adamw() const { return *adamw_; }
  optim::Muon* muon() { return muon_.get(); }  // null with --optimizer adamw
  const optim::Muon* muon() const { return muon_.get(); }

 private:
  size_t muon_groups() const { return muon_ ? muon_->num_param_groups() : 0; }
  double muon_lr(double schedule_lr) const;
  double adam_lr(size_t g, double schedule_lr) const;  // AdamW group g's
  double lr_ = 0, muon_lr_ = 0;
  std::vector<double> adam_peak_;  // each AdamW group's peak learning rate (--optimizer muon)
  std::unique_ptr<optim::Muon> muon_;
  std::unique_ptr<optim::AdamW> adamw_;
};

}  // namespace ag::train
