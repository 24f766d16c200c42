#include "train/memory_check.h"

#include <stdexcept>

#include "autograd/memory_limit.h"
#include "models/registry.h"
#include "train/config_error.h"

namespace ag::train {

namespace {
// "gpt: n_layer 4, n_head 4, n_embd 128, block_size 64, vocab 65" (the integer fields it reads).
std::string describe(const models::ModelEntry& e, const models::ModelConfig& c) {
  std::string s = c.name + ":";
  models::visit_model_fields(c, [&](const auto& v, const char* key, const char*) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, int64_t>)
      for (const auto& f : e.fields)
        if (f == key) s += std::string(s.back() == ':' ? " " : ", ") + key + " " + std::to_string(v);
  });
  return s + ", vocab " + std::to_string(c.vocab_size);
}
}  // namespace

void require_training_fits(const models::ModelConfig& cfg, int64_t batch) {
  require_training_fits(models::find_model(cfg.name), cfg, batch);
}

void require_training_fits(const models::ModelEntry& entry, const models::ModelConfig& cfg, int64_t batch) {
  const std::string flags = "lower --batch, --block, --embd, --layers or --hidden";
  int64_t need = 0;
  try {
    need = entry.memory_bytes(cfg, batch, true);
  } catch (const std::overflow_error& e) {
    throw ConfigError("the model (" + describe(entry, cfg) + ") with batch " + std::to_string(batch) +
                      " is too large to train: its " + e.what() + "; " + flags);
  }
  const MemoryLimit limit = memory_limit();
  if (need > limit.bytes)
    throw ConfigError("training the model (" + describe(entry, cfg) + ") on batch " + std::to_string(batch) + " needs about " +
                      human_bytes(need) + " of memory, more than the " + human_bytes(limit.bytes) + " of " +
                      limit.where + "; " + flags);
}

void require_inference_fits(const models::ModelConfig& cfg, const std::string& file) {
  const models::ModelEntry& entry = models::find_model(cfg.name);
  int64_t need = 0;
  try {
    need = entry.memory_bytes(cfg, 1, false);
  } catch (const std::overflow_error& e) {
    throw std::runtime_error(file + ": the model its metadata describes (" + describe(entry, cfg) + ") is too large: its " +
                             e.what());
  }
  const MemoryLimit limit = memory_limit();
  if (need > limit.bytes)
    throw std::runtime_error(file + ": running the model its metadata describes (" + describe(entry, cfg) + ") needs about " +
                             human_bytes(need) + " of memory, more than the " + human_bytes(limit.bytes) + " of " +
                             limit.where);
}

}  // namespace ag::train
