// The character GPT of `attograd train` (nanoGPT's GPT: models/transformer_lm.h, --model gpt),
// built from the reference's ops; backward() of its loss fills every parameter's grad. Its
// parameters have TransformerLM's names, so a trained model's weights copy in by name.
#pragma once
#include <map>
#include <string>

#include "reference/ops.h"

namespace ag::ref {

// torch.nn.MultiheadAttention's weights: in_proj (3E, E) with rows [q; k; v], in_proj_bias (3E),
// out_proj (E, E) and its bias (E).
struct AttentionWeights {
  Tensor in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;
};
// Its forward, batch first: query (N, L, E), key and value (N, S, E), num_heads heads of
// d = E / num_heads. hidden and mask as attention()'s, broadcast to (N, H, L, S). Returns the
// output (N, L, E), and the weights and scores per head (N, H, L, S).
Attention multihead_attention(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionWeights& w,
                              int64_t num_heads, const Tensor& hidden = nullptr, const Tensor& mask = nullptr);

struct GPTConfig {
  int64_t vocab_size = 65, n_layer = 4, n_head = 4, n_embd = 128, block_size = 64;
};

class GPT {
 public:
  // Every parameter zero (the norms' weights one), requiring grad: copy weights in by name.
  explicit GPT(const GPTConfig& config);
  Tensor forward(const Tensor& idx) const;                       // ids (B, T) -> logits (B, T, V)
  Tensor loss(const Tensor& idx, const Tensor& targets) const;  // mean next-character cross-entropy

  GPTConfig config;
  // "tok_emb.weight" (V, E), "pos_emb.weight" (block_size, E), for each block i "blocks.i.ln1.weight",
  // ".ln1.bias", ".attn.in_proj_weight", ".attn.in_proj_bias", ".attn.out_proj.weight", ".attn.out_proj.bias",
  // ".ln2.weight", ".ln2.bias", ".mlp.fc.weight" (4E, E), ".mlp.fc.bias", ".mlp.proj.weight" (E, 4E),
  // ".mlp.proj.bias", then "ln_f.weight", "ln_f.bias". The head is tok_emb.weight itself.
  std::map<std::string, Tensor> params;

 private:
  const Tensor& p(const std::string& name) const { return params.at(name); }
};

}  // namespace ag::ref
