#include "train/param_groups.h"

#include <set>
#include <string>

namespace ag::train {

std::vector<optim::AdamW::ParamGroup> decay_groups(const models::LanguageModel& model, const optim::AdamWOptions& options) {
  optim::AdamW::ParamGroup decay{{}, options}, no_decay{{}, options};
  no_decay.options.weight_decay = 0.0;
  const std::vector<std::string> undecayed = model.parameter_table().names(models::OptimGroup::NoDecay);
  const std::set<std::string> no(undecayed.begin(), undecayed.end());
  for (const auto& [name, p] : model.named_parameters()) (no.count(name) ? no_decay : decay).params.push_back(p);
  return {decay, no_decay};
}

}  // namespace ag::train
