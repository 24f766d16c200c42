// --optimizer muon, the modded-nanogpt speedrun's: Muon (momentum --muon-momentum, 0.95 by
// default, Nesterov, 5 Newton–Schulz steps) for the hidden layers' weight matrices at
// --muon-lr, and AdamW for everything else (embeddings, the head, gains, biases) at --lr,
// decayed as adamw's, except the tables that are only looked up (an untied token embedding),
// which get a group of their own at --embed-lr when it is given. Both decouple their weight
// decay, --weight-decay, each multiplying it by its own learning rate. Which parameter goes
// where is the model's parameter table's: its Matrix rows to Muon, its Decay and NoDecay rows
// to AdamW's groups, its lookup_tables() to the third.
//
// --muon-momentum-warmup W: Muon's momentum rises linearly from --muon-momentum-start at step 0
// to --muon-momentum at step W and stays there (modded-nanogpt's 0.85 → 0.95 over 300 steps),
// set in Muon's groups before each step (the row's before_step), as torch's
// param_groups[i]["momentum"] would be.
//
// AdamW comes first, so that the run's group 0 (whose rate the log shows) is the decayed
// group at --lr, as with adamw.
#include <algorithm>
#include <set>
#include <stdexcept>
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

const Setting kMuonMomentum{"muon-momentum", "muon_momentum", 0.95,
                            "Muon's momentum (--optimizer muon); with --muon-momentum-warmup, where it rises to",
                            Check::Fraction};
const Setting kMuonMomentumWarmup{"muon-momentum-warmup", "muon_momentum_warmup", 0.0,
                                  "Muon's momentum rises linearly from --muon-momentum-start at step 0 to "
                                  "--muon-momentum at this step, then stays (--optimizer muon; modded-nanogpt: 300; 0: off)",
                                  Check::NonNegative};
const Setting kMuonMomentumStart{"muon-momentum-start", "muon_momentum_start", 0.85,
                                 "Muon's momentum at step 0 under --muon-momentum-warmup (--optimizer muon)",
                                 Check::Fraction};

// Muon's momentum for step `it`: start + (end − start)·min(it / W, 1), modded-nanogpt's rule.
double momentum_at(const TrainConfig& cfg, int64_t it) {
  const double end = cfg.settings.get(kMuonMomentum), warmup = cfg.settings.get(kMuonMomentumWarmup);
  if (!(warmup > 0)) return end;
  const double frac = std::min(static_cast<double>(it) / warmup, 1.0), start = cfg.settings.get(kMuonMomentumStart);
  return (1.0 - frac) * start + frac * end;
}

// The Muon part of what build() made: part 1 of the CombinedOptimizer.
optim::Muon& muon_part(optim::Optimizer& opt) {
  auto* combined = dynamic_cast<optim::CombinedOptimizer*>(&opt);
  optim::Muon* muon = combined && combined->num_parts() == 2 ? dynamic_cast<optim::Muon*>(&combined->part(1)) : nullptr;
  if (!muon) throw std::logic_error("--optimizer muon: the optimizer is not the one its row built (AdamW, then Muon)");
  return *muon;
}

void before_step(optim::Optimizer& opt, const TrainConfig& cfg, int64_t it) {
  if (!(cfg.settings.get(kMuonMomentumWarmup) > 0)) return;  // off: the momentum stays as built
  const double momentum = momentum_at(cfg, it);
  for (auto& group : muon_part(opt).param_groups()) group.options.momentum = momentum;
}

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
  muon.lr = cfg.settings.get(kMuonLr), muon.weight_decay = cfg.weight_decay, muon.momentum = momentum_at(cfg, 0);
  std::vector<std::unique_ptr<optim::Optimizer>> parts;
  parts.push_back(std::make_unique<optim::AdamW>(groups));
  parts.push_back(std::make_unique<optim::Muon>(matrices, muon));
  return std::make_unique<optim::CombinedOptimizer>(std::move(parts));
}

std::string describe(const TrainConfig& cfg) {
  std::ostringstream s;
  s << "muon (lr " << cfg.settings.get(kMuonLr) << " for the hidden matrices, AdamW for the rest";
  if (cfg.settings.get(kEmbedLr) > 0) s << ", the embedding at lr " << cfg.settings.get(kEmbedLr);
  if (cfg.settings.get(kMuonMomentumWarmup) > 0)
    s << "; momentum " << cfg.settings.get(kMuonMomentumStart) << " rising to " << cfg.settings.get(kMuonMomentum) << " over "
      << cfg.settings.get(kMuonMomentumWarmup) << " steps";
  else if (cfg.settings.get(kMuonMomentum) != kMuonMomentum.default_value)
    s << "; momentum " << cfg.settings.get(kMuonMomentum);
  s << ")";
  return s.str();
}
}  // namespace

OptimizerEntry muon_optimizer() {
  return {"muon", "Muon for the hidden weight matrices at --muon-lr, AdamW for the rest (the modded-nanogpt speedrun's)",
          {kMuonLr, kEmbedLr, kMuonMomentum, kMuonMomentumWarmup, kMuonMomentumStart}, build, describe, before_step};
}

}  // namespace ag::train
