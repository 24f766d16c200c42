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
  // initializers, the rest keeping these defaults (the parts after arch off).
  int64_t vocab_size = 65;
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 64;
  double dropout = 0.0;
  Architecture arch = {};  // nanoGPT's GPT unless set
  // Value embeddings (modded-nanogpt's): value_embeds extra token-embedding tables (V, E) whose
  // lookup of the ids is mixed into the attention's values, v ← λ_v·v + λ_e·ve, in a U: layer
  // i < value_embeds uses table i, layer n_layer − value_embeds + i uses table i again, the
  // layers between none. At most n_layer / 2 (rounded down), so that no layer has two tables:
  // 4 layers with 1 table: layers 0 and 3; with 2: layers 0, 1 and 2, 3. 0: none.
  int64_t value_embeds = 0;
  // U-net skips (modded-nanogpt's): the outputs of the first n_layer / 2 blocks (rounded down)
  // are kept and added, in reverse order, each times a learnable weight, to the inputs of the
  // last n_layer / 2: block n_layer − 1 − i gets skip_weights[n_layer/2 − 1 − i]·(output of
  // block i), so the first block of the second half gets the last block of the first half's.
  // With an odd n_layer the middle block neither keeps its output nor gets one. Needs
  // n_layer ≥ 2.
  bool unet_skips = false;
  // The x0 residual (modded-nanogpt's): each block's input, after its U-net skip, is mixed with
  // the embedding x0 (the model's input to block 0): x ← x_lambda·x + x0_lambda·x0, two
  // learnable scalars per block, 1 and 0 at first (so the model starts as without it).
  bool x0_residual = false;

  // The value table layer `layer` mixes into its values, or -1 for none.
  int64_t value_table_of(int64_t layer) const;
  // The row of the model's value_lambdas (2·value_embeds, 2) a layer with a value table reads:
  // its rank among those layers, in layer order.
  int64_t value_lambda_row(int64_t layer) const;
  int64_t unet_pairs() const { return unet_skips ? n_layer / 2 : 0; }  // the skips (skip_weights' length)
  void validate() const;  // throws std::invalid_argument naming the bad field
};

}  // namespace ag::models
