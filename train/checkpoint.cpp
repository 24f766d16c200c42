#include "train/checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "autograd/safetensors.h"

namespace ag::train {

std::map<std::string, std::string> model_metadata(const models::GPTConfig& cfg, const data::CharTokenizer& tok) {
  return {{"format", "attograd.TransformerLM"},
          {"n_layer", std::to_string(cfg.n_layer)},
          {"n_head", std::to_string(cfg.n_head)},
          {"n_embd", std::to_string(cfg.n_embd)},
          {"block_size", std::to_string(cfg.block_size)},
          {"vocab", nlohmann::json(tok.chars()).dump()}};
}

void save_model(const std::string& path, const models::TransformerLM& model, const data::CharTokenizer& tok) {
  if (tok.vocab_size() != model.config().vocab_size)
    throw std::invalid_argument("save_model: tokenizer has " + std::to_string(tok.vocab_size()) +
                                " characters but the model's vocab_size is " + std::to_string(model.config().vocab_size));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, p] : model.named_parameters()) tensors.emplace_back(name, p.detach().to(DType::Float32));
  save_safetensors(path, tensors, model_metadata(model.config(), tok));
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
  throw std::runtime_error(f.source() + ": __metadata__ '" + key + "' must be a positive integer, got \"" + it->second + "\"");
}
}  // namespace

LoadedModel load_model(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = (std::filesystem::path(path) / "model.safetensors").string();
  if (!std::filesystem::exists(file))
    throw std::runtime_error(file + ": no such checkpoint (give a run folder or its model.safetensors)");
  const SafeTensorsFile f = SafeTensorsFile::load(file);

  models::GPTConfig cfg;
  cfg.n_layer = meta_int(f, "n_layer");
  cfg.n_head = meta_int(f, "n_head");
  cfg.n_embd = meta_int(f, "n_embd");
  cfg.block_size = meta_int(f, "block_size");
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
    cfg.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
  Generator g(0);
  out.model = std::make_unique<models::TransformerLM>(cfg, DType::Float32, g);

  std::set<std::string> expected;
  std::map<std::string, Tensor> state;
  for (auto& [name, p] : out.model->named_parameters()) {
    expected.insert(name);
    if (!f.has(name)) throw std::runtime_error(file + ": tensor '" + name + "' is missing");
    const auto& info = f.info(name);
    if (info.dtype != "F32") throw std::runtime_error(file + ": tensor '" + name + "' is " + info.dtype + ", expected F32");
    if (Shape(info.shape) != p.shape())
      throw std::runtime_error(file + ": tensor '" + name + "' has shape " + shape_str(info.shape) + ", but the metadata (" +
                               "n_layer/n_head/n_embd/block_size/vocab) needs " + shape_str(p.shape()));
    state[name] = f.get(name);
  }
  for (const auto& n : f.names())
    if (!expected.count(n)) throw std::runtime_error(file + ": unexpected tensor '" + n + "'");
  out.model->load_state_dict(state);
  for (const auto& [name, t] : state)
    for (double v : t.to_double_vector())
      if (!std::isfinite(v)) throw std::runtime_error(file + ": tensor '" + name + "' holds a non-finite value");
  out.model->eval();
  return out;
}

}  // namespace ag::train
