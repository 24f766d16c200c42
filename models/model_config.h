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
#include <stdexcept>
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
  X(int64_t,     hidden,     "hidden",  512,   "width of the hidden tanh layer (mlp)")
// clang-format on

namespace ag::models {

struct ModelConfig {
#define AG_DECLARE_MODEL_FIELD(type, member, flag, def, help) type member = def;
  AG_MODEL_FIELDS(AG_DECLARE_MODEL_FIELD)
#undef AG_DECLARE_MODEL_FIELD
  int64_t vocab_size = 65;  // not a flag: it comes from the corpus

  ModelConfig() = default;
  // A GPT's configuration is a model configuration named "gpt", or "modern" for the modern
  // architecture (its soft-cap kept); the other fields keep their defaults. Any other
  // architecture has no name: std::invalid_argument.
  ModelConfig(const GPTConfig& g)  // NOLINT(google-explicit-constructor): c.model = GPTConfig{...}
      : name(transformer_name(g.arch)), n_layer(g.n_layer), n_head(g.n_head), n_embd(g.n_embd),
        block_size(g.block_size), dropout(g.dropout), vocab_size(g.vocab_size) {
    if (name == "modern") softcap = g.arch.softcap;
  }
  static std::string transformer_name(const Architecture& a) {
    if (a == Architecture()) return "gpt";
    if (a == Architecture::modern(a.softcap)) return "modern";
    throw std::invalid_argument("ModelConfig: a transformer architecture other than gpt's or modern's has no model name");
  }
  // The transformer's configuration: the modern architecture when named "modern", else the GPT's.
  GPTConfig gpt() const {
    GPTConfig g;
    g.vocab_size = vocab_size, g.n_layer = n_layer, g.n_head = n_head, g.n_embd = n_embd, g.block_size = block_size;
    g.dropout = dropout;
    if (name == "modern") g.arch = Architecture::modern(softcap);
    return g;
  }
};

// f(member, key, flag) for every row of AG_MODEL_FIELDS (key: the member's name).
template <class Config, class F>
void visit_model_fields(Config& c, F&& f) {
#define AG_VISIT_MODEL_FIELD(type, member, flag, def, help) f(c.member, #member, flag);
  AG_MODEL_FIELDS(AG_VISIT_MODEL_FIELD)
#undef AG_VISIT_MODEL_FIELD
}

}  // namespace ag::models
