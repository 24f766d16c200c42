#include "models/registry.h"

#include <stdexcept>

#include "base/checked.h"
#include "models/char_mlp.h"
#include "models/model_size.h"
#include "models/transformer_lm.h"

namespace ag::models {

namespace {
// The parts a model turns on by a field that is off by default: set for a model that lacks
// them, they are refused, not ignored.
void refuse_parts_it_lacks(const ModelEntry& e, const ModelConfig& c) {
  const auto refuse = [&](const char* flag) {
    throw std::invalid_argument("--" + std::string(flag) + ": the model " + e.name +
                                " has no such part (value embeddings, U-net skips and the x0 residual are the modern model's)");
  };
  if (c.value_embeds != 0 && !e.reads("value_embeds")) refuse("value-embeds");
  if (c.unet_skips && !e.reads("unet_skips")) refuse("unet-skips");
  if (c.x0_residual && !e.reads("x0_residual")) refuse("x0-residual");
}

// A TransformerLM of the architecture `arch` gives: the rows that differ only in it share this.
ModelEntry transformer_row(std::string name, std::string format, std::string summary, std::vector<std::string> fields,
                           std::function<Architecture(const ModelConfig&)> arch) {
  return {std::move(name), std::move(format), std::move(summary), std::move(fields),
          [](const ModelConfig& c) {
            refuse_parts_it_lacks(find_model(c.name), c);
            c.gpt().validate();
          },
          [](const ModelConfig& c, DType dtype, Generator& gen) -> std::unique_ptr<LanguageModel> {
            return std::make_unique<TransformerLM>(c.gpt(), dtype, gen);
          },
          [](const ModelConfig& c) { return TransformerLM::param_table(c.gpt()); },
          [](const ModelConfig& c) { return TransformerLM::activation_floats_per_position(c.gpt()); }, std::move(arch)};
}
}  // namespace

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> table = {
      transformer_row("gpt", "attograd.TransformerLM", "a GPT-style transformer (models/transformer_lm.h)",
                      {"n_layer", "n_head", "n_embd", "block_size", "dropout"},
                      [](const ModelConfig&) { return Architecture(); }),
      transformer_row("modern", "attograd.ModernTransformerLM",
                      "the modded-nanogpt speedrun's transformer: RoPE, RMSNorm, QK-norm, relu², untied head (models/transformer_lm.h)",
                      {"n_layer", "n_head", "n_embd", "block_size", "dropout", "softcap", "value_embeds", "unet_skips",
                       "x0_residual"},
                      [](const ModelConfig& c) { return Architecture::modern(c.softcap); }),
      {"mlp", "attograd.CharMLP", "the character MLP of Bengio et al. 2003, as in makemore (models/char_mlp.h)",
       {"n_embd", "block_size", "hidden"},
       [](const ModelConfig& c) {
         refuse_parts_it_lacks(find_model("mlp"), c);
         CharMLP::validate(c);
       },
       [](const ModelConfig& c, DType dtype, Generator& gen) -> std::unique_ptr<LanguageModel> {
         return std::make_unique<CharMLP>(c, dtype, gen);
       },
       CharMLP::param_table, CharMLP::activation_floats_per_position},
  };
  return table;
}

ModelConfig::ModelConfig(const GPTConfig& g)
    : n_layer(g.n_layer), n_head(g.n_head), n_embd(g.n_embd), block_size(g.block_size), dropout(g.dropout),
      value_embeds(g.value_embeds), unet_skips(g.unet_skips), x0_residual(g.x0_residual), vocab_size(g.vocab_size) {
  for (const ModelEntry& e : model_registry()) {
    if (!e.architecture) continue;
    ModelConfig probe;
    if (e.reads("softcap")) probe.softcap = g.arch.softcap;
    if (e.architecture(probe) == g.arch) {
      name = e.name, softcap = probe.softcap;
      return;
    }
  }
  throw std::invalid_argument("ModelConfig: a transformer architecture that no model of the registry names (known: " +
                              model_names() + ")");
}

GPTConfig ModelConfig::gpt() const {
  const ModelEntry& e = find_model(name);
  if (!e.architecture) throw std::invalid_argument("the model " + name + " is not a transformer");
  GPTConfig g;
  g.vocab_size = vocab_size, g.n_layer = n_layer, g.n_head = n_head, g.n_embd = n_embd, g.block_size = block_size;
  g.dropout = dropout;
  g.arch = e.architecture(*this);
  if (e.reads("value_embeds")) g.value_embeds = value_embeds;
  if (e.reads("unet_skips")) g.unet_skips = unet_skips;
  if (e.reads("x0_residual")) g.x0_residual = x0_residual;
  return g;
}

bool ModelEntry::reads(const std::string& field) const {
  for (const auto& f : fields)
    if (f == field) return true;
  return false;
}

int64_t ModelEntry::memory_bytes(const ModelConfig& cfg, int64_t batch, bool training) const {
  return models::memory_bytes(parameters(cfg).num_parameters(), activation_floats_per_position(cfg),
                              checked::mul(batch, cfg.block_size, "memory estimate"), training);
}

std::string model_names() {
  std::string s;
  for (const auto& e : model_registry()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

const ModelEntry& find_model(const std::string& name) {
  for (const auto& e : model_registry())
    if (e.name == name) return e;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + model_names() + ")");
}

const ModelEntry& find_model_by_format(const std::string& format) {
  for (const auto& e : model_registry())
    if (e.format == format) return e;
  std::string known;
  for (const auto& e : model_registry()) known += (known.empty() ? "" : ", ") + e.format;
  throw std::invalid_argument("unknown model format '" + format + "' (known: " + known + ")");
}

std::unique_ptr<LanguageModel> make_model(const ModelConfig& cfg, DType dtype, Generator& gen) {
  const ModelEntry& e = find_model(cfg.name);
  e.validate(cfg);
  return e.make(cfg, dtype, gen);
}

}  // namespace ag::models
