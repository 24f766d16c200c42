#include "train/run_folder/train_state_v1.h"

#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "models/registry.h"
#include "train/run_folder/checkpoint.h"
#include "train/run_folder/train_state.h"

namespace ag::train {

namespace {
// The layout named its optimizer: "muon" kept Muon's momentum for the table's Matrix rows.
const OptimizerChoice& v1_muon() {
  static const OptimizerChoice muon("muon");
  return muon;
}

// The names Muon kept. A configuration read from a file may claim a model of 2^31 layers: its
// names are listed only when the count is at most max_tensors (checked arithmetic).
std::set<std::string> muon_names(const TrainConfig& cfg, int64_t max_tensors = std::numeric_limits<int64_t>::max()) {
  if (!(cfg.optimizer == v1_muon())) return {};
  const models::ParamTable table = models::find_model(cfg.model.name).parameters(cfg.model);
  const int64_t count = table.num_tensors();
  if (count > max_tensors)
    throw std::runtime_error("the configuration describes a model of " + std::to_string(count) + " tensors, more than the file holds");
  const std::vector<std::string> names = table.names(models::OptimGroup::Matrix);
  return {names.begin(), names.end()};
}

std::vector<std::string> state_prefixes(const std::set<std::string>& muon, const std::string& name) {
  if (muon.count(name)) return {"model.", "muon.momentum_buffer."};
  return {"model.", "adam.exp_avg.", "adam.exp_avg_sq."};
}
}  // namespace

bool is_v1_train_state(const SafeTensorsFile& f) { return f.metadata().count("adam_step") > 0; }

void check_v1_tensors(const SafeTensorsFile& f, const TrainConfig& cfg) {
  std::set<std::string> muon;
  try {
    muon = muon_names(cfg, static_cast<int64_t>(f.size()));
    std::stoll(f.metadata().at("adam_step"));
  } catch (const std::exception& e) {  // an overflow, more tensors than the file holds, a bad adam_step
    throw std::runtime_error(f.source() + ": __metadata__: " + e.what());
  }
  check_tensors_against_config(f, cfg.model, [&](const std::string& name) { return state_prefixes(muon, name); }, 3);
}

optim::StateDict v1_optimizer_state(const SafeTensorsFile& f, const TrainConfig& cfg, const models::LanguageModel& model,
                                    const optim::Optimizer& opt) {
  const std::set<std::string> muon = muon_names(cfg);
  auto get = [&](const std::string& key, const Tensor& p) { return read_state_tensor(f, key, p); };
  std::map<const TensorImpl*, std::string> name_of;
  for (const auto& [name, p] : model.named_parameters()) name_of[&p.impl()] = name;
  // torch keeps the step as a 0-d float32 tensor; the layout kept one for all of AdamW's.
  const Tensor step = Tensor::scalar(static_cast<double>(std::stoll(f.metadata().at("adam_step"))), DType::Float32);
  optim::StateDict sd = opt.state_dict();
  sd.state.clear();
  int64_t index = 0;
  for (size_t g = 0; g < opt.num_param_groups(); ++g) {
    sd.param_groups[g].initial_lr = opt.get_lr(g);
    for (const Tensor& p : opt.group_params(g)) {
      const std::string& name = name_of.at(&p.impl());
      if (muon.count(name))
        sd.state[index] = {{"momentum_buffer", get("muon.momentum_buffer." + name, p)}};
      else
        sd.state[index] = {{"step", step}, {"exp_avg", get("adam.exp_avg." + name, p)}, {"exp_avg_sq", get("adam.exp_avg_sq." + name, p)}};
      ++index;
    }
  }
  return sd;
}

}  // namespace ag::train
