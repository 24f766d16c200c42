#include "train/optimizers/param_groups.h"

#include <set>
#include <string>

#include "train/config/run_config.h"

namespace ag::train {

optim::AdamWOptions run_adamw_options(const TrainConfig& cfg) {
  return {.lr = cfg.lr, .betas = {cfg.beta1, cfg.beta2}, .eps = 1e-8, .weight_decay = cfg.weight_decay};
}

std::vector<optim::AdamW::ParamGroup> decay_groups(const models::LanguageModel& model, const optim::AdamWOptions& options) {
  optim::AdamW::ParamGroup decay{{}, options}, no_decay{{}, options};
  no_decay.options.weight_decay = 0.0;
  const std::vector<std::string> undecayed = model.parameter_table().names(models::OptimGroup::NoDecay);
  const std::set<std::string> no(undecayed.begin(), undecayed.end());
  for (const auto& [name, p] : model.named_parameters()) (no.count(name) ? no_decay : decay).params.push_back(p);
  return {decay, no_decay};
}

}  // namespace ag::train
