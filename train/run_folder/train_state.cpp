#include "train/run_folder/train_state.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "autograd/safetensors.h"
#include "base/short_quote.h"
#include "models/registry.h"
#include "train/finite.h"
#include "train/run_folder/checkpoint.h"
#include "train/run_folder/metadata_seal.h"
#include "train/run_folder/train_state_v1.h"

namespace ag::train {

using nlohmann::json;

namespace {
std::string rng_to_json(const Generator::State& s) {
  json a = json::array();
  for (uint64_t w : s) a.push_back(std::to_string(w));  // strings: JSON numbers lose 64-bit precision
  return a.dump();
}

// A generator's words: 6 of an attograd stream, 632 of a torch stream (autograd/random.h).
Generator::State rng_from_json(const std::string& text, const std::string& what) {
  const json a = json::parse(text);
  if (!a.is_array()) throw std::runtime_error(what + " must be an array of words");
  Generator::State s(a.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string w = a[i].get<std::string>();
    size_t used = 0;
    s[i] = std::stoull(w, &used);
    if (used != w.size()) throw std::runtime_error(what + " holds a bad word \"" + w + "\"");
  }
  try {
    Generator().set_state(s);  // the checks of a state, on a generator of no consequence
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
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

// ---- the optimizer's state dict in the file ----------------------------------------------------

constexpr const char* kStatePrefix = "optimizer.state.";
constexpr const char* kGroupsKey = "optimizer.param_groups";

json option_to_json(const optim::OptionValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

optim::OptionValue option_from_json(const json& j, const std::string& key) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    std::vector<double> v;
    for (const json& x : j) {
      if (!x.is_number()) throw std::runtime_error("option '" + key + "' holds " + x.dump() + ", not a number");
      v.push_back(x.get<double>());
    }
    return v;
  }
  throw std::runtime_error("option '" + key + "' is " + j.dump());
}

std::string groups_to_json(const std::vector<optim::StateDict::Group>& groups) {
  json a = json::array();
  for (const auto& g : groups) {
    json o = json::object();
    for (const auto& [k, v] : g.options) o[k] = option_to_json(v);
    o["params"] = g.params;
    if (g.initial_lr) o["initial_lr"] = *g.initial_lr;
    a.push_back(o);
  }
  return a.dump();
}

// The groups as the file keeps them; their parameters must be 0 .. n−1, each once, for the n
// parameters of the model (the optimizer holds every one).
std::vector<optim::StateDict::Group> groups_from_json(const std::string& text, int64_t n) {
  const json a = json::parse(text);
  if (!a.is_array()) throw std::runtime_error("not a JSON array");
  std::vector<optim::StateDict::Group> out;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (const json& o : a) {
    if (!o.is_object() || !o.contains("params") || !o["params"].is_array())
      throw std::runtime_error("a group without its \"params\"");
    optim::StateDict::Group g;
    for (const auto& [k, v] : o.items()) {
      if (k == "params") {
        for (const json& i : v) {
          if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= n || seen[i.get<size_t>()])
            throw std::runtime_error("a group holds parameter " + i.dump() + ", not one of the model's " + std::to_string(n) +
                                     " parameters or one already in a group");
          seen[i.get<size_t>()] = true;
          g.params.push_back(i.get<int64_t>());
        }
      } else if (k == "initial_lr") {
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw std::runtime_error("initial_lr is " + v.dump());
        g.initial_lr = v.get<double>();
      } else {
        g.options[k] = option_from_json(v, k);
      }
    }
    out.push_back(std::move(g));
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw std::runtime_error("parameter " + std::to_string(i) + " is in no group");
  return out;
}

// "optimizer.state.<i>.<key>" -> (i, key), with i below n; nullopt for another name.
std::optional<std::pair<int64_t, std::string>> state_tensor_name(const std::string& name, int64_t n) {
  const std::string prefix = kStatePrefix;
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == name.size()) return std::nullopt;
  const std::string digits = name.substr(prefix.size(), dot - prefix.size());
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t i = std::stoll(digits);
  if (i >= n) return std::nullopt;
  return std::make_pair(i, name.substr(dot + 1));
}
}  // namespace

void save_train_state(const std::string& path, const TrainConfig& cfg, const models::LanguageModel& model,
                      const optim::Optimizer& opt, const RunPosition& pos, const data::CharTokenizer& tok) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : model.named_parameters()) tensors.emplace_back("model." + name, p.detach());
  const optim::StateDict sd = opt.state_dict();
  for (const auto& [i, state] : sd.state)
    for (const auto& [key, t] : state) tensors.emplace_back(kStatePrefix + std::to_string(i) + "." + key, t);
  require_finite_to_save(tensors, path);
  std::map<std::string, std::string> md = {
      {"format", kTrainStateFormat},
      {"iter", std::to_string(pos.iter)},
      {"eval_done", pos.eval_done ? "true" : "false"},
      {"best_val_loss", fmt_double(pos.best_val_loss)},
      {"skipped_updates", std::to_string(pos.skipped_updates)},
      {"last_train_loss", fmt_double(pos.last_train_loss)},
      {"last_val_loss", fmt_double(pos.last_val_loss)},
      {"elapsed_s", fmt_double(pos.elapsed_s())},
      {"elapsed_ns", std::to_string(pos.elapsed_ns)},
      {"rng.model", rng_to_json(pos.rng_model)},
      {"rng.batch", rng_to_json(pos.rng_batch)},
      {"rng.eval", rng_to_json(pos.rng_eval)},
      {"config", config_to_json(cfg)},
      {"vocab", json(tok.chars()).dump()},
      {kGroupsKey, groups_to_json(sd.param_groups)}};
  if (pos.budget) md["time_budget"] = budget_state_to_json(*pos.budget);
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
    if (const auto ns = f.metadata().find("elapsed_ns"); ns != f.metadata().end()) {
      s.pos.elapsed_ns = std::stoll(ns->second);
    } else {  // states before the exact clock kept its seconds
      double seconds = 0;
      optional_double("elapsed_s", seconds);
      s.pos.elapsed_ns = std::llround(seconds * 1e9);
    }
    if (s.pos.elapsed_ns < 0) throw std::runtime_error("the run's elapsed time is negative");
    s.pos.rng_model = rng_from_json(meta(f, "rng.model"), "rng.model");
    s.pos.rng_batch = rng_from_json(meta(f, "rng.batch"), "rng.batch");
    s.pos.rng_eval = rng_from_json(meta(f, "rng.eval"), "rng.eval");
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(path, 0) == 0) throw;
    throw std::runtime_error(path + ": bad __metadata__: " + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": bad __metadata__: " + e.what());
  }
  if (const auto it = f.metadata().find("time_budget"); it != f.metadata().end())
    s.pos.budget = budget_state_from_json(it->second, path);
  if (s.tokenizer.vocab_size() != s.config.model.vocab_size)
    throw std::runtime_error(path + ": the vocab holds " + std::to_string(s.tokenizer.vocab_size()) +
                             " characters but the configuration says vocab_size " +
                             std::to_string(s.config.model.vocab_size));
  if (s.pos.iter < 0 || s.pos.iter > s.config.iters)
    throw std::runtime_error(path + ": iter " + std::to_string(s.pos.iter) + " is outside the run's 0.." +
                             std::to_string(s.config.iters));
  // Every tensor against the configuration before the run builds a model from it.
  if (is_v1_train_state(f)) {
    check_v1_tensors(f, s.config);
    return s;
  }
  // The weights by the model's table; the rest must be the optimizer's state, of parameters that
  // exist, each F32 (its shape is the optimizer's to check when it loads).
  int64_t n = 0;
  try {
    n = models::find_model(s.config.model.name).parameters(s.config.model).num_tensors();
  } catch (const std::exception&) {  // an overflow: the check below says so, naming the file
  }
  check_tensors_against_config(f, s.config.model, [](const std::string&) { return std::vector<std::string>{"model."}; }, 1,
                               [&](const std::string& name) { return state_tensor_name(name, n).has_value(); });
  for (const auto& name : f.names())
    if (state_tensor_name(name, n) && f.info(name).dtype != "F32")
      throw std::runtime_error(path + ": tensor '" + name + "' is " + f.info(name).dtype + ", not F32");
  try {
    groups_from_json(meta(f, kGroupsKey), n);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": __metadata__ '" + kGroupsKey + "' is not an optimizer's parameter groups: " + e.what());
  }
  return s;
}

void restore_train_state(const std::string& path, models::LanguageModel& model, optim::Optimizer& opt) {
  restore_train_state(SafeTensorsFile::load(path), model, opt);
}

Tensor read_state_tensor(const SafeTensorsFile& f, const std::string& key, const Tensor& like) {
  const std::string& path = f.source();
  if (!f.has(key)) throw std::runtime_error(path + ": tensor '" + key + "' is missing");
  const auto& info = f.info(key);
  if (info.dtype != "F32" || Shape(info.shape) != like.shape())
    throw std::runtime_error(path + ": tensor '" + key + "' is " + info.dtype + shape_str(info.shape) +
                             " but the run's configuration needs F32" + shape_str(like.shape()) +
                             " (a train state from a different configuration?)");
  Tensor t = f.get(key);
  require_finite_loaded({{key, t}}, path);
  return t;
}

void restore_train_state(const SafeTensorsFile& f, models::LanguageModel& model, optim::Optimizer& opt) {
  const std::string& path = f.source();
  const TrainConfig cfg = config_from_json(meta(f, "config"), path);
  const auto params = model.named_parameters();
  const int64_t n = static_cast<int64_t>(params.size());
  std::map<std::string, Tensor> weights;
  for (const auto& [name, p] : params) {
    weights[name] = read_state_tensor(f, "model." + name, p);
  }
  optim::StateDict sd;
  if (is_v1_train_state(f)) {
    sd = v1_optimizer_state(f, cfg, model, opt);
  } else {
    try {
      sd.param_groups = groups_from_json(meta(f, kGroupsKey), n);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": __metadata__ '" + kGroupsKey + "' is not an optimizer's parameter groups: " + e.what());
    }
    for (const auto& name : f.names()) {
      if (name.rfind("model.", 0) == 0) continue;
      const auto at = state_tensor_name(name, n);
      if (!at) throw std::runtime_error(path + ": unexpected tensor '" + short_quote(name) + "'");
      Tensor t = f.get(name);
      require_finite_loaded({{name, t}}, path);
      sd.state[at->first][at->second] = t;
    }
  }
  for (const auto& name : f.names())
    if (name.rfind("model.", 0) == 0 && !weights.count(name.substr(6)))
      throw std::runtime_error(path + ": unexpected tensor '" + short_quote(name) + "'");
  model.load_state_dict(weights);
  try {
    opt.load_state_dict(sd);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(path + ": the optimizer's state does not fit the run's --optimizer " + cfg.optimizer.name() +
                             ": " + e.what());
  }
}

}  // namespace ag::train
