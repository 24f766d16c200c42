// --optimizer muon, the modded-nanogpt speedrun's: Muon (momentum 0.95, Nesterov, 5
// Newton–Schulz steps) for the hidden layers' weight matrices at --muon-lr, and AdamW for
// everything else (embeddings, the head, gains, biases) at --lr, decayed as adamw's, except the
// tables that are only looked up (an untied token embedding), which get a group of their own at
// --embed-lr when it is given. Both decouple their weight decay, --weight-decay, each
// multiplying it by its own learning rate. Which parameter goes where is the model's parameter
// table's: its Matrix rows to Muon, its Decay and NoDecay rows to AdamW's groups, its
// lookup_tables() to the third.
//
// AdamW comes first, so that the run's group 0 (whose rate the log shows) is the decayed
// group at --lr, as with adamw.
#include <set>
#include <sstream>

#include "optim/adam.h"
#include "optim/combined.h"
#include "optim/muon.h"
#include "train/config/run_config.h"
#include "train/optimizers/param_groups.h"
#include "train/optimizers/registry.h"

namespace ag::train {

namespace {
const Setting kMuonLr{"muon-lr", "muon_lr", 0.02, "peak learning rate of Muon's matrices (--optimizer muon)",
                      Check::NonNegative};
const Setting kEmbedLr{"embed-lr", "embed_lr", 0.0,
                       "peak learning rate of AdamW for the tables that are only looked up, as an untied token "
                       "embedding (--optimizer muon; 0: --lr)",
                       Check::NonNegative};

std::unique_ptr<optim::Optimizer> build(const models::LanguageModel& model, const TrainConfig& cfg) {
  const models::ParamTable table = model.parameter_table();
  const std::vector<std::string> matrix_names = table.names(models::OptimGroup::Matrix),
                                 undecayed_names = table.names(models::OptimGroup::NoDecay),
                                 table_names = table.lookup_tables();
  const std::set<std::string> is_matrix(matrix_names.begin(), matrix_names.end()),
      undecayed(undecayed_names.begin(), undecayed_names.end()), looked_up(table_names.begin(), table_names.end());
  const optim::AdamWOptions adam = run_adamw_options(cfg);
  const double embed_lr = cfg.settings.get(kEmbedLr);
  std::vector<Tensor> matrices;
  optim::AdamW::ParamGroup decay{{}, adam}, no_decay{{}, adam}, tables{{}, adam};
  no_decay.options.weight_decay = 0.0;
  if (embed_lr > 0) tables.options.lr = embed_lr;
  for (const auto& [name, p] : model.named_parameters()) {
    if (is_matrix.count(name)) matrices.push_back(p);
    else if (embed_lr > 0 && looked_up.count(name)) tables.params.push_back(p);
    else (undecayed.count(name) ? no_decay : decay).params.push_back(p);
  }
  if (matrices.empty()) throw std::invalid_argument("--optimizer muon: the model has no hidden weight matrices for Muon");
  std::vector<optim::AdamW::ParamGroup> groups;
  for (auto* g : {&decay, &no_decay, &tables})
    if (!g->params.empty()) groups.push_back(*g);
  optim::MuonOptions muon;  // torch's defaults (momentum 0.95, Nesterov, 5 Newton–Schulz steps)
  muon.lr = cfg.settings.get(kMuonLr), muon.weight_decay = cfg.weight_decay;
  std::vector<std::unique_ptr<optim::Optimizer>> parts;
  parts.push_back(std::make_unique<optim::AdamW>(groups));
  parts.push_back(std::make_unique<optim::Muon>(matrices, muon));
  return std::make_unique<optim::CombinedOptimizer>(std::move(parts));
}

std::string describe(const TrainConfig& cfg) {
  std::ostringstream s;
  s << "muon (lr " << cfg.settings.get(kMuonLr) << " for the hidden matrices, AdamW for the rest";
  if (cfg.settings.get(kEmbedLr) > 0) s << ", the embedding at lr " << cfg.settings.get(kEmbedLr);
  s << ")";
  return s.str();
}
}  // namespace

OptimizerEntry muon_optimizer() {
  return {"muon", "Muon for the hidden weight matrices at --muon-lr, AdamW for the rest (the modded-nanogpt speedrun's)",
          {kMuonLr, kEmbedLr}, build, describe};
}

}  // namespace ag::train
