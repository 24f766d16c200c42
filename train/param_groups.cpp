#include "train/param_groups.h"

namespace ag::train {

std::vector<optim::AdamW::ParamGroup> decay_groups(const nn::Module& model, const optim::AdamWOptions& options) {
  optim::AdamW::ParamGroup decay{{}, options}, no_decay{{}, options};
  no_decay.options.weight_decay = 0.0;
  for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  return {decay, no_decay};
}

}  // namespace ag::train
