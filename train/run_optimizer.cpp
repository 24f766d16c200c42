#include "train/run_optimizer.h"

#include <set>
#include <stdexcept>

#include "train/param_groups.h"
#include "train/config/run_config.h"

namespace ag::train {

void RunOptimizer::check_name(const std::string& name) {
  if (name != "adamw" && name != "muon") throw std::invalid_argument("--optimizer must be adamw or muon, got '" + name + "'");
}

RunOptimizer::RunOptimizer(const models::LanguageModel& model, const TrainConfig& cfg) : lr_(cfg.lr), muon_lr_(cfg.muon_lr) {
  check_name(cfg.optimizer);
  const optim::AdamWOptions adam{.lr = cfg.lr, .betas = {cfg.beta1, cfg.beta2}, .eps = 1e-8, .weight_decay = cfg.weight_decay};
  if (cfg.optimizer == "adamw") {
    adamw_ = std::make_unique<optim::AdamW>(decay_groups(model, adam));
    return;
  }
  // The parameter table's groups: Matrix rows to Muon, Decay and NoDecay rows to AdamW, the
  // tables only looked up in a Decay group of their own at --embed-lr.
  const models::ParamTable table = model.parameter_table();
  const std::vector<std::string> matrix_names = table.names(models::OptimGroup::Matrix),
                                 undecayed_names = table.names(models::OptimGroup::NoDecay),
                                 table_names = table.lookup_tables();
  const std::set<std::string> is_matrix(matrix_names.begin(), matrix_names.end()),
      undecayed(undecayed_names.begin(), undecayed_names.end()), looked_up(table_names.begin(), table_names.end());
  std::vector<Tensor> matrices;
  optim::AdamW::ParamGroup decay{{}, adam}, no_decay{{}, adam}, tables{{}, adam};
  no_decay.options.weight_decay = 0.0;
  if (cfg.embed_lr > 0) tables.options.lr = cfg.embed_lr;
  for (const auto& [name, p] : model.named_parameters()) {
    if (is_matrix.count(name)) matrices.push_back(p);
    else if (cfg.embed_lr > 0 && looked_up.count(name)) tables.params.push_back(p);
    else (undecayed.count(name) ? no_decay : decay).params.push_back(p);
  }
  if (matrices.empty()) throw std::invalid_argument("--optimizer muon: the model has no hidden weight matrices for Muon");
  optim::MuonOptions muon;  // torch's defaults (momentum 0.95, Nesterov, 5 Newton–Schulz steps)
  muon.lr = cfg.muon_lr, muon.weight_decay = cfg.weight_decay;
  muon_ = std::make_unique<optim::Muon>(matrices, muon);
  std::vector<optim::AdamW::ParamGroup> groups;
  for (auto* g : {&decay, &no_decay, &tables})
    if (!g->params.empty()) groups.push_back(*g), adam_peak_.push_back(g->options.lr);
  adamw_ = std::make_unique<optim::AdamW>(groups);
}

double RunOptimizer::muon_lr(double lr) const { return lr_ > 0 ? lr * (muon_lr_ / lr_) : 0.0; }

double RunOptimizer::adam_lr(size_t g, double lr) const {
  return g < adam_peak_.size() && lr_ > 0 ? lr * (adam_peak_[g] / lr_) : lr;
}

void RunOptimizer::step() {
  if (muon_) muon_->step();
  adamw_->step();
}

void RunOptimizer::set_schedule_lr(double lr) {
  for (size_t g = 0; g < adamw_->num_param_groups(); ++g) adamw_->param_groups()[g].options.lr = adam_lr(g, lr);
  if (muon_)  // the same shape: muon_lr at the schedule's peak
    for (auto& g : muon_->param_groups()) g.options.lr = muon_lr(lr);
}

size_t RunOptimizer::num_param_groups() const { return muon_groups() + adamw_->num_param_groups(); }

const std::vector<Tensor>& RunOptimizer::group_params(size_t g) const {
  return g < muon_groups() ? muon_->group_params(g) : adamw_->group_params(g - muon_groups());
}

double RunOptimizer::get_lr(size_t g) const {
  return g < muon_groups() ? muon_->get_lr(g) : adamw_->get_lr(g - muon_groups());
}

void RunOptimizer::set_lr(size_t g, double lr) {
  if (g < muon_groups()) muon_->set_lr(g, muon_lr(lr));
  else adamw_->set_lr(g - muon_groups(), adam_lr(g - muon_groups(), lr));
}

std::optional<double>& RunOptimizer::initial_lr(size_t g) {
  return g < muon_groups() ? muon_->initial_lr(g) : adamw_->initial_lr(g - muon_groups());
}

}  // namespace ag::train
