#include "train/memory_check.h"

#include <stdexcept>

#include "autograd/memory_limit.h"
#include "models/gpt_size.h"
#include "train/config_error.h"

namespace ag::train {

namespace {
std::string describe(const models::GPTConfig& c) {
  return std::to_string(c.n_layer) + " layers, " + std::to_string(c.n_embd) + " wide, block " +
         std::to_string(c.block_size) + ", vocab " + std::to_string(c.vocab_size);
}
}  // namespace

void require_training_fits(const models::GPTConfig& cfg, int64_t batch) {
  const std::string flags = "lower --batch, --block, --embd or --layers";
  int64_t need = 0;
  try {
    need = models::gpt_training_bytes(cfg, batch);
  } catch (const std::overflow_error& e) {
    throw ConfigError("the model (" + describe(cfg) + ") with batch " + std::to_string(batch) +
                      " is too large to train: its " + e.what() + "; " + flags);
  }
  const MemoryLimit limit = memory_limit();
  if (need > limit.bytes)
    throw ConfigError("training the model (" + describe(cfg) + ") on batch " + std::to_string(batch) + " needs about " +
                      human_bytes(need) + " of memory, more than the " + human_bytes(limit.bytes) + " of " +
                      limit.where + "; " + flags);
}

void require_inference_fits(const models::GPTConfig& cfg, const std::string& file) {
  int64_t need = 0;
  try {
    need = models::gpt_inference_bytes(cfg);
  } catch (const std::overflow_error& e) {
    throw std::runtime_error(file + ": the model its metadata describes (" + describe(cfg) + ") is too large: its " +
                             e.what());
  }
  const MemoryLimit limit = memory_limit();
  if (need > limit.bytes)
    throw std::runtime_error(file + ": running the model its metadata describes (" + describe(cfg) + ") needs about " +
                             human_bytes(need) + " of memory, more than the " + human_bytes(limit.bytes) + " of " +
                             limit.where);
}

}  // namespace ag::train
