// The hyperparameters of a run's model, as one table. Each row of AG_MODEL_FIELDS is
//   X(type, member, flag, default, help)
// and declares a member of ModelConfig (with its default); train/config/run_config.h turns the same
// rows into `attograd train` flags, their help, the train state's JSON and the resume rules
// (a model field never changes on resume). One row adds a model hyperparameter everywhere.
//
// The fields are the union over the registered models (models/registry.h); each model reads
// the ones it needs and says so in the help text.
#pragma once
#include <cstdint>
#include <string>

#include "models/gpt_config.h"

// clang-format off
#define AG_MODEL_FIELDS(X)                                                                                   \
  X(std::string, name,       "model",   "gpt", "the model: gpt (nanoGPT's transformer), modern (the modded-nanogpt speedrun's: RoPE, RMSNorm, QK-norm, relu², untied head) or mlp (the character MLP of Bengio et al. 2003)") \
  X(int64_t,     n_layer,    "layers",  4,     "transformer blocks (gpt, modern)")                                  \
  X(int64_t,     n_head,     "heads",   4,     "attention heads (gpt, modern)")                                     \
  X(int64_t,     n_embd,     "embd",    128,   "embedding width (gpt, modern; mlp: per character)")                 \
  X(int64_t,     block_size, "block",   64,    "context length in characters (gpt, modern; mlp: the characters it concatenates)") \
  X(double,      dropout,    "dropout", 0.0,   "dropout probability (gpt, modern)")                         \
  X(double,      softcap,    "softcap", 30.0,  "logits capped as softcap·tanh(logits/softcap) (modern; 0: off)") \
  X(int64_t,     value_embeds, "value-embeds", 0, "N value embeddings (modern; 0: off): N more token tables whose lookup is mixed into the attention's values, v = λv·v + λe·ve, of the first N and the last N layers (table i in layer i and layer layers−N+i; N at most layers/2); each layer's two λ start at 0.5") \
  X(bool,        unet_skips, "unet-skips", false, "U-net skips (modern): the outputs of the first layers/2 blocks are added, in reverse order and each times a learnable weight starting at 1, to the inputs of the last layers/2 (an odd count's middle block has none)") \
  X(bool,        x0_residual, "x0-residual", false, "x0 residual (modern): each block's input mixed with the embedding, x = λ·x + μ·x0, λ and μ learnable per block, starting at 1 and 0") \
  X(int64_t,     hidden,     "hidden",  512,   "width of the hidden tanh layer (mlp)")
// clang-format on

namespace ag::models {

struct ModelConfig {
#define AG_DECLARE_MODEL_FIELD(type, member, flag, def, help) type member = def;
  AG_MODEL_FIELDS(AG_DECLARE_MODEL_FIELD)
#undef AG_DECLARE_MODEL_FIELD
  int64_t vocab_size = 65;  // not a flag: it comes from the corpus

  ModelConfig() = default;
  // A transformer's configuration is named after its architecture's row of the registry
  // (models/registry.h: gpt, modern), its soft-cap kept when that row reads one; the other
  // fields keep their defaults. An architecture no row names: std::invalid_argument.
  ModelConfig(const GPTConfig& g);  // NOLINT(google-explicit-constructor): c.model = GPTConfig{...}
  // The transformer's configuration, of the architecture this configuration's row gives
  // (std::invalid_argument for a model that is not a transformer). Defined with the registry.
  GPTConfig gpt() const;
};

// f(member, key, flag) for every row of AG_MODEL_FIELDS (key: the member's name).
template <class Config, class F>
void visit_model_fields(Config& c, F&& f) {
#define AG_VISIT_MODEL_FIELD(type, member, flag, def, help) f(c.member, #member, flag);
  AG_MODEL_FIELDS(AG_VISIT_MODEL_FIELD)
#undef AG_VISIT_MODEL_FIELD
}

}  // namespace ag::models
