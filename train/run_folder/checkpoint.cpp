#include "train/run_folder/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

#include "base/checked.h"
#include "autograd/safetensors.h"
#include "base/short_quote.h"
#include "models/registry.h"
#include "train/finite.h"
#include "train/memory_check.h"
#include "train/run_folder/metadata_seal.h"
#include "train/config/run_config.h"

namespace ag::train {

namespace {
// The model fields a model.safetensors records: what the model computes (its sizes, softcap),
// not dropout, which changes training only (the train state's configuration keeps it).
bool recorded_in_model_file(const std::string& key) { return key != "dropout"; }

// A part that is off by default (--value-embeds 0, --unet-skips false) is recorded only when
// on: the files of models without it stay what they were, and a file without the key (one
// written before the part existed) reads as off.
template <class T>
bool off_by_default(const T& def) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t>) return def == T{};
  return false;
}
}  // namespace

std::map<std::string, std::string> model_metadata(const models::LanguageModel& model, const data::CharTokenizer& tok) {
  const models::ModelConfig cfg = model.model_config();
  const models::ModelEntry& entry = models::find_model(cfg.name);
  std::map<std::string, std::string> md = {{"format", entry.format}, {"vocab", nlohmann::json(tok.chars()).dump()}};
  const models::ModelConfig defaults;
  models::visit_model_fields(cfg, [&](const auto& v, const char* key, const char*) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool>) {
      if (!recorded_in_model_file(key)) return;
      T def{};
      models::visit_model_fields(defaults, [&](const auto& d, const char* k, const char*) {
        if constexpr (std::is_same_v<std::decay_t<decltype(d)>, T>)
          if (std::string(k) == key) def = d;
      });
      if (off_by_default(def) && v == def) return;
      for (const auto& f : entry.fields)
        if (f == key) md[key] = format_value(v);  // a double as the shortest text that reads back exactly
    }
  });
  return md;
}

void save_model(const std::string& path, const models::LanguageModel& model, const data::CharTokenizer& tok) {
  if (tok.vocab_size() != model.vocab_size())
    throw std::invalid_argument("save_model: tokenizer has " + std::to_string(tok.vocab_size()) +
                                " characters but the model's vocab_size is " + std::to_string(model.vocab_size()));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, p] : model.named_parameters()) tensors.emplace_back(name, p.detach().to(DType::Float32));
  require_finite_to_save(tensors, path);
  auto metadata = model_metadata(model, tok);
  seal_metadata(metadata);
  save_safetensors(path, tensors, metadata);
}

namespace {
int64_t meta_int(const SafeTensorsFile& f, const char* key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw std::runtime_error(f.source() + ": __metadata__ lacks '" + key + "' (not an attograd model?)");
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v > 0 && v < (1ll << 31)) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(f.source() + ": __metadata__ '" + key + "' must be a positive integer below 2^31, got \"" +
                           short_quote(it->second) + "\"");
}

bool meta_bool(const SafeTensorsFile& f, const char* key) {
  const std::string& v = f.metadata().at(key);
  if (v == "true" || v == "false") return v == "true";
  throw std::runtime_error(f.source() + ": __metadata__ '" + key + "' must be true or false, got \"" + short_quote(v) + "\"");
}

double meta_double(const SafeTensorsFile& f, const char* key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw std::runtime_error(f.source() + ": __metadata__ lacks '" + key + "' (not an attograd model?)");
  try {
    size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used == it->second.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(f.source() + ": __metadata__ '" + key + "' must be a finite number, got \"" +
                           short_quote(it->second) + "\"");
}
}  // namespace

void check_tensors_against_config(const SafeTensorsFile& f, const models::ModelConfig& cfg,
                                  const std::vector<std::string>& prefixes) {
  check_tensors_against_config(f, cfg, [&](const std::string&) { return prefixes; }, prefixes.size());
}

void check_tensors_against_config(const SafeTensorsFile& f, const models::ModelConfig& cfg,
                                  const std::function<std::vector<std::string>(const std::string& name)>& prefixes_of,
                                  size_t max_prefixes, const std::function<bool(const std::string& name)>& also) {
  const models::ModelEntry& entry = models::find_model(cfg.name);
  const std::string what = "the metadata (its hyperparameters and vocab)";
  int64_t count = 0;
  models::ParamTable table;
  try {
    table = entry.parameters(cfg);
    count = checked::mul(table.num_tensors(), static_cast<int64_t>(max_prefixes), "tensor count");
  } catch (const std::overflow_error& e) {
    throw std::runtime_error(f.source() + ": " + what + " describes an impossible model: " + e.what());
  }
  // The count first: listing the expected tensors of n_layer = 2^31 - 1 would itself exhaust
  // memory. A count near the file's is listed, to name the missing or unexpected tensor.
  if (count > 2 * static_cast<int64_t>(f.size()) + 64)
    throw std::runtime_error(f.source() + ": " + what + " describes a model of " + std::to_string(count) +
                             " tensors, but the file holds " + std::to_string(f.size()));
  std::set<std::string> expected;
  for (const auto& [name, shape] : table.shapes()) {
    for (const std::string& prefix : prefixes_of(name)) {
      const std::string key = prefix + name;
      expected.insert(key);
      if (!f.has(key)) throw std::runtime_error(f.source() + ": tensor '" + key + "' is missing");
      const auto& info = f.info(key);
      if (info.dtype != "F32" || Shape(info.shape) != shape)
        throw std::runtime_error(f.source() + ": tensor '" + key + "' is " + info.dtype + " of shape " +
                                 shape_str(info.shape) + ", but " + what + " needs F32 of shape " + shape_str(shape) +
                                 " (a file from a different configuration?)");
    }
  }
  for (const auto& n : f.names())
    if (!expected.count(n) && !(also && also(n)))
      throw std::runtime_error(f.source() + ": unexpected tensor '" + short_quote(n) + "'");
}

LoadedModel load_model(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = (std::filesystem::path(path) / "model.safetensors").string();
  if (!std::filesystem::exists(file))
    throw std::runtime_error(file + ": no such checkpoint (give a run folder or its model.safetensors)");
  const SafeTensorsFile f = SafeTensorsFile::load(file);
  check_metadata_seal(f);

  // Which model: files written before there was more than one have no format and are GPTs.
  const auto fmt = f.metadata().find("format");
  if (fmt != f.metadata().end() && fmt->second == kTrainStateFormat) {
    const std::string dir = std::filesystem::path(file).parent_path().string();
    throw std::runtime_error(file + ": a train state (what train --resume reads), not a model; give its run folder " +
                             (dir.empty() ? std::string(".") : dir) + " or the model.safetensors in it");
  }
  const models::ModelEntry* entry = nullptr;
  try {
    entry = fmt == f.metadata().end() ? &models::find_model("gpt") : &models::find_model_by_format(fmt->second);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(file + ": " + e.what() + " (not an attograd model?)");
  }
  models::ModelConfig cfg;
  cfg.name = entry->name;
  models::visit_model_fields(cfg, [&](auto& v, const char* key, const char*) {
    using T = std::decay_t<decltype(v)>;
    for (const auto& k : entry->fields) {
      if (k != key || !recorded_in_model_file(key)) continue;
      if (off_by_default(v) && !f.metadata().count(key)) continue;  // still the default: off
      if constexpr (std::is_same_v<T, int64_t>) v = meta_int(f, key);
      if constexpr (std::is_same_v<T, double>) v = meta_double(f, key);
      if constexpr (std::is_same_v<T, bool>) v = meta_bool(f, key);
    }
  });
  auto it = f.metadata().find("vocab");
  if (it == f.metadata().end()) throw std::runtime_error(file + ": __metadata__ lacks 'vocab'");
  LoadedModel out;
  out.path = file;
  try {
    out.tokenizer = data::CharTokenizer::from_chars(nlohmann::json::parse(it->second).get<std::vector<std::string>>());
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": __metadata__ 'vocab' is not a valid JSON array of characters: " + e.what());
  }
  cfg.vocab_size = out.tokenizer.vocab_size();
  try {
    entry->validate(cfg);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
  // The metadata against the tensors, and the memory it implies, before anything is built:
  // n_layer = 2^31 - 1 must be refused here, not after building layers until memory runs out.
  check_tensors_against_config(f, cfg, {""});
  require_inference_fits(cfg, file);
  Generator g(0);
  out.model = entry->make(cfg, DType::Float32, g);

  std::set<std::string> expected;
  std::map<std::string, Tensor> state;
  for (auto& [name, p] : out.model->named_parameters()) {
    expected.insert(name);
    if (!f.has(name)) throw std::runtime_error(file + ": tensor '" + name + "' is missing");
    const auto& info = f.info(name);
    if (info.dtype != "F32") throw std::runtime_error(file + ": tensor '" + name + "' is " + info.dtype + ", expected F32");
    if (Shape(info.shape) != p.shape())
      throw std::runtime_error(file + ": tensor '" + name + "' has shape " + shape_str(info.shape) + ", but the metadata (" +
                               "its hyperparameters and vocab) needs " + shape_str(p.shape()));
    state[name] = f.get(name);
  }
  for (const auto& n : f.names())
    if (!expected.count(n)) throw std::runtime_error(file + ": unexpected tensor '" + n + "'");
  require_finite_loaded({state.begin(), state.end()}, file);
  out.model->load_state_dict(state);
  out.model->eval();
  return out;
}

}  // namespace ag::train
