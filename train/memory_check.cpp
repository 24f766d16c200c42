#include "train/memory_check.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "autograd/blas_buffers.h"
#include "base/checked.h"
#include "base/memory_limit.h"
#include "models/registry.h"
#include "train/config/config_error.h"

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
  const std::string what = "training the model (" + describe(entry, cfg) + ") on batch " + std::to_string(batch);
  if (need > limit.bytes)
    throw ConfigError(what + " needs about " + human_bytes(need) + " of memory, more than the " + human_bytes(limit.bytes) +
                      " of " + limit.where + "; " + flags);
  // OpenBLAS's buffers first (they must never be mapped later, autograd/blas_buffers.h), then
  // the model's tensors in what is left of the address space.
  reserve_blas_buffers_for_threads();
  try {
    require_address_space(what, need, flags);
  } catch (const std::runtime_error& e) {
    throw ConfigError(e.what());
  }
}

void require_training_fits(const TrainConfig& c) { require_training_fits(models::find_model(c.model.name), c); }

void require_training_fits(const models::ModelEntry& entry, const TrainConfig& c) {
  require_training_fits(entry, c.model, c.batch_size);
  const MemoryLimit limit = memory_limit();
  struct Grows {
    const char* flag;
    int64_t value, bytes_each;
    const char* what;
  };
  for (const Grows& g : {Grows{"eval-iters", c.eval_iters, 8, "the losses of each evaluation (8 bytes a batch)"},
                         Grows{"sample-tokens", c.sample_tokens, 12, "the final sample (about 12 bytes a character)"}}) {
    int64_t need = 0;
    try {
      need = checked::mul(std::max<int64_t>(g.value, 0), g.bytes_each, g.flag);
    } catch (const std::overflow_error&) {
      need = std::numeric_limits<int64_t>::max();
    }
    if (need > limit.bytes)
      throw ConfigError("--" + std::string(g.flag) + " " + std::to_string(g.value) + ": " + g.what + " would need " +
                        human_bytes(need) + ", more than the " + human_bytes(limit.bytes) + " of " + limit.where +
                        "; lower --" + g.flag);
  }
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
  const std::string what = file + ": running the model its metadata describes (" + describe(entry, cfg) + ")";
  if (need > limit.bytes)
    throw std::runtime_error(what + " needs about " + human_bytes(need) + " of memory, more than the " +
                             human_bytes(limit.bytes) + " of " + limit.where);
  reserve_blas_buffers_for_threads();
  require_address_space(what, need, "raise ulimit -v");
}

}  // namespace ag::train
