// --optimizer adamw, nanoGPT's: AdamW over two groups, the parameters the model's table decays at
// --weight-decay and the others (biases, gains) at 0, all at --lr (train/optimizers/param_groups.h).
#include "optim/adam.h"
#include "train/config/run_config.h"
#include "train/optimizers/param_groups.h"
#include "train/optimizers/registry.h"

namespace ag::train {

OptimizerEntry adamw_optimizer() {
  return {"adamw",
          "nanoGPT's AdamW (--lr, --beta1, --beta2; --weight-decay on the matrices and embeddings)",
          {},
          [](const models::LanguageModel& model, const TrainConfig& cfg) -> std::unique_ptr<optim::Optimizer> {
            return std::make_unique<optim::AdamW>(decay_groups(model, run_adamw_options(cfg)));
          },
          [](const TrainConfig&) { return std::string("adamw"); }};
}

}  // namespace ag::train
