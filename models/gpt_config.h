// GPTConfig: the hyperparameters of a TransformerLM (models/transformer_lm.h), and its
// Architecture: nanoGPT's GPT by default, or the modern recipe of the modded-nanogpt speedrun
// (`attograd train --model modern`).
#pragma once
#include <cstdint>

namespace ag::models {

// The choices that tell the two transformers apart; every default is the GPT's.
struct Architecture {
  bool rms_norm = false;       // RMSNorm instead of LayerNorm (and no norm biases)
  bool norm_gain = true;       // the norms have a gain (weight)
  bool rope = false;           // rotary position embeddings on q and k instead of a position table
  bool qk_norm = false;        // q and k normalised per head (RMSNorm without a gain)
  bool relu_squared = false;   // MLP activation relu(x)² instead of GELU
  bool bias = true;            // biases in the attention and MLP projections
  bool tied_head = true;       // the head is tok_emb (else a Linear lm_head of its own)
  bool zero_init_projections = false;  // attn.out_proj, mlp.proj and lm_head start at zero
  double softcap = 0;          // logits = softcap·tanh(logits/softcap); 0: none

  // RMSNorm without a gain, rotary embeddings, QK-norm, relu², no biases, an untied head and
  // zero-initialised projections into the residual stream, logits soft-capped at `softcap`.
  static Architecture modern(double softcap);
  bool operator==(const Architecture&) const = default;
};

struct GPTConfig {
  // An aggregate: GPTConfig{vocab, layers, heads, embd, block, dropout, arch} or designated
  // initializers, the rest keeping these defaults.
  int64_t vocab_size = 65;
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 64;
  double dropout = 0.0;
  Architecture arch = {};  // nanoGPT's GPT unless set
  void validate() const;  // throws std::invalid_argument naming the bad field
};

}  // namespace ag::models
