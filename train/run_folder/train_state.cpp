#include "train/run_folder/train_state.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "autograd/safetensors.h"
#include "base/short_quote.h"
#include "models/registry.h"
#include "train/run_folder/checkpoint.h"
#include "train/finite.h"
#include "train/run_folder/metadata_seal.h"

namespace ag::train {

using nlohmann::json;

namespace {
std::string rng_to_json(const Generator::State& s) {
  json a = json::array();
  for (uint64_t w : s) a.push_back(std::to_string(w));  // strings: JSON numbers lose 64-bit precision
  return a.dump();
}

Generator::State rng_from_json(const std::string& text, const std::string& what) {
  Generator::State s{};
  const json a = json::parse(text);
  if (!a.is_array() || a.size() != s.size()) throw std::runtime_error(what + " must be an array of " + std::to_string(s.size()));
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string w = a[i].get<std::string>();
    size_t used = 0;
    s[i] = std::stoull(w, &used);
    if (used != w.size()) throw std::runtime_error(what + " holds a bad word \"" + w + "\"");
  }
  if ((s[0] | s[1] | s[2] | s[3]) == 0) throw std::runtime_error(what + " is all zero");
  return s;
}

std::string fmt_double(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const std::string& meta(const SafeTensorsFile& f, const std::string& key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw std::runtime_error(f.source() + ": __metadata__ lacks '" + key + "'");
  return it->second;
}
}  // namespace

namespace {
// The tensors a train state keeps for a parameter, by prefix: Muon's momentum for the matrices
// of --optimizer muon, AdamW's two moments for everything else.
// Which are Muon's is the model's parameter table's (its Matrix rows), as in RunOptimizer.
// A configuration read from a file may claim a model of 2^31 layers: its names are listed only
// when the count is at most max_tensors (the tensors a file can hold; checked arithmetic).
std::set<std::string> muon_names(const TrainConfig& cfg, int64_t max_tensors = std::numeric_limits<int64_t>::max()) {
  if (cfg.optimizer != "muon") return {};
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

void save_train_state(const std::string& path, const TrainConfig& cfg, const models::LanguageModel& model,
                      const RunOptimizer& opt, const RunPosition& pos, const data::CharTokenizer& tok) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  // A parameter has no state before its first update: its moments are zeros and its step 0.
  std::optional<int64_t> adam_step;
  const std::set<std::string> muon = muon_names(cfg);
  for (const auto& [name, p] : model.named_parameters()) {
    if (muon.count(name)) {
      const optim::MuonParamState* st = opt.muon()->state(p);
      tensors.emplace_back("model." + name, p.detach());
      tensors.emplace_back("muon.momentum_buffer." + name, st ? st->momentum_buffer : Tensor::zeros(p.shape(), p.dtype()));
      continue;
    }
    const optim::AdamParamState* st = opt.adamw().state(p);
    const int64_t step = st ? st->step : 0;
    if (adam_step && *adam_step != step)
      throw std::logic_error(path + ": the parameters' AdamW step counts differ (" + std::to_string(*adam_step) + " and " +
                             std::to_string(step) + " at " + name + "); the train state keeps one");
    adam_step = step;
    tensors.emplace_back("model." + name, p.detach());
    tensors.emplace_back("adam.exp_avg." + name, st ? st->exp_avg : Tensor::zeros(p.shape(), p.dtype()));
    tensors.emplace_back("adam.exp_avg_sq." + name, st ? st->exp_avg_sq : Tensor::zeros(p.shape(), p.dtype()));
  }
  require_finite_to_save(tensors, path);
  std::map<std::string, std::string> md = {
      {"format", kTrainStateFormat},
      {"iter", std::to_string(pos.iter)},
      {"eval_done", pos.eval_done ? "true" : "false"},
      {"adam_step", std::to_string(adam_step.value_or(0))},
      {"best_val_loss", fmt_double(pos.best_val_loss)},
      {"skipped_updates", std::to_string(pos.skipped_updates)},
      {"last_train_loss", fmt_double(pos.last_train_loss)},
      {"last_val_loss", fmt_double(pos.last_val_loss)},
      {"elapsed_s", fmt_double(pos.elapsed_s)},
      {"rng.model", rng_to_json(pos.rng_model)},
      {"rng.batch", rng_to_json(pos.rng_batch)},
      {"rng.eval", rng_to_json(pos.rng_eval)},
      {"config", config_to_json(cfg)},
      {"vocab", json(tok.chars()).dump()}};
  if (!pos.run_id.empty()) md["run_id"] = pos.run_id;  // train/run_folder/run_identity.h
  seal_metadata(md);
  save_safetensors(path, tensors, md);
}

LoadedTrainState read_train_state(const std::string& path) { return read_train_state(SafeTensorsFile::load(path)); }

LoadedTrainState read_train_state(const SafeTensorsFile& f) {
  const std::string& path = f.source();
  LoadedTrainState s;
  if (meta(f, "format") != kTrainStateFormat)
    throw std::runtime_error(path + ": not an attograd train state (format \"" + short_quote(meta(f, "format")) + "\")");
  check_metadata_seal(f);
  s.config = config_from_json(meta(f, "config"), path);
  try {
    models::find_model(s.config.model.name).validate(s.config.model);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(path + ": __metadata__ 'config' is not a valid run configuration: " + e.what());
  }
  try {
    s.tokenizer = data::CharTokenizer::from_chars(json::parse(meta(f, "vocab")).get<std::vector<std::string>>());
    if (const auto id = f.metadata().find("run_id"); id != f.metadata().end()) s.pos.run_id = id->second;
    s.pos.iter = std::stoll(meta(f, "iter"));
    s.pos.eval_done = meta(f, "eval_done") == "true";
    s.pos.skipped_updates = std::stoll(meta(f, "skipped_updates"));
    const std::string& b = meta(f, "best_val_loss");
    s.pos.best_val_loss = b == "inf" ? std::numeric_limits<double>::infinity() : std::stod(b);
    // Added after the first train states: optional.
    const auto optional_double = [&](const char* key, double& v) {
      const auto it = f.metadata().find(key);
      if (it != f.metadata().end()) v = std::stod(it->second);
    };
    optional_double("last_train_loss", s.pos.last_train_loss);
    optional_double("last_val_loss", s.pos.last_val_loss);
    optional_double("elapsed_s", s.pos.elapsed_s);
    s.pos.rng_model = rng_from_json(meta(f, "rng.model"), "rng.model");
    s.pos.rng_batch = rng_from_json(meta(f, "rng.batch"), "rng.batch");
    s.pos.rng_eval = rng_from_json(meta(f, "rng.eval"), "rng.eval");
    std::stoll(meta(f, "adam_step"));
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(path, 0) == 0) throw;
    throw std::runtime_error(path + ": bad __metadata__: " + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": bad __metadata__: " + e.what());
  }
  if (s.tokenizer.vocab_size() != s.config.model.vocab_size)
    throw std::runtime_error(path + ": the vocab holds " + std::to_string(s.tokenizer.vocab_size()) +
                             " characters but the configuration says vocab_size " +
                             std::to_string(s.config.model.vocab_size));
  if (s.pos.iter < 0 || s.pos.iter > s.config.iters)
    throw std::runtime_error(path + ": iter " + std::to_string(s.pos.iter) + " is outside the run's 0.." +
                             std::to_string(s.config.iters));
  // Every tensor against the configuration before the run builds a model from it.
  const TrainConfig& cfg = s.config;
  std::set<std::string> muon;
  try {
    muon = muon_names(cfg, static_cast<int64_t>(f.size()));
  } catch (const std::exception& e) {  // an overflow, or more tensors than the file holds
    throw std::runtime_error(path + ": __metadata__ 'config': " + e.what());
  }
  check_tensors_against_config(f, cfg.model, [&](const std::string& name) { return state_prefixes(muon, name); }, 3);
  return s;
}

void restore_train_state(const std::string& path, models::LanguageModel& model, RunOptimizer& opt) {
  restore_train_state(SafeTensorsFile::load(path), model, opt);
}

void restore_train_state(const SafeTensorsFile& f, models::LanguageModel& model, RunOptimizer& opt) {
  const std::string& path = f.source();
  const TrainConfig cfg = config_from_json(meta(f, "config"), path);
  std::set<std::string> expected;
  const auto params = model.named_parameters();
  std::map<std::string, Tensor> weights;
  std::vector<optim::AdamParamState> states;  // AdamW's parameters, in order
  std::vector<std::pair<Tensor, Tensor>> muon_states;  // (parameter, momentum buffer)
  const std::set<std::string> muon = muon_names(cfg);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    for (const std::string& prefix : state_prefixes(muon, name)) {
      const std::string key = prefix + name;
      expected.insert(key);
      if (!f.has(key)) throw std::runtime_error(path + ": tensor '" + key + "' is missing");
      const auto& info = f.info(key);
      if (info.dtype != "F32" || Shape(info.shape) != p.shape())
        throw std::runtime_error(path + ": tensor '" + key + "' is " + info.dtype + shape_str(info.shape) +
                                 " but the run's configuration needs F32" + shape_str(p.shape()) +
                                 " (a train state from a different configuration?)");
    }
    auto get_finite = [&](const std::string& key) {
      Tensor t = f.get(key);
      require_finite_loaded({{key, t}}, path);
      return t;
    };
    weights[name] = get_finite("model." + name);
    if (muon.count(name))
      muon_states.emplace_back(p, get_finite("muon.momentum_buffer." + name));
    else
      states.push_back({0, get_finite("adam.exp_avg." + name), get_finite("adam.exp_avg_sq." + name), Tensor()});
  }
  for (const auto& n : f.names())
    if (!expected.count(n)) throw std::runtime_error(path + ": unexpected tensor '" + n + "'");
  model.load_state_dict(weights);
  const int64_t step = std::stoll(f.metadata().at("adam_step"));
  size_t k = 0;
  for (const auto& [name, p] : params) {
    if (muon.count(name)) continue;
    states[k].step = step;
    opt.adamw().set_state(p, std::move(states[k++]));
  }
  for (auto& [p, buf] : muon_states) opt.muon()->set_state(p, {buf});
}

}  // namespace ag::train
