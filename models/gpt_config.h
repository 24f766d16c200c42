// GPTConfig: the hyperparameters of a TransformerLM (models/transformer_lm.h).
#pragma once
#include <cstdint>

namespace ag::models {

struct GPTConfig {
  int64_t vocab_size = 65;
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 64;
  double dropout = 0.0;
  void validate() const;  // throws std::invalid_argument naming the bad field
};

}  // namespace ag::models
