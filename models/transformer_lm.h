// TransformerLM: a GPT-style character language model built from attograd's nn modules, in
// one of two architectures (models/gpt_config.h).
//
// nanoGPT's GPT (`--model gpt`, the default):
//   x = tok_emb(idx) + pos_emb(0..T-1)                      (B, T, E)
//   for each block:  x = x + attn(ln1(x), causal)            MultiheadAttention, batch_first
//                    x = x + mlp(ln2(x))                     Linear(E,4E) -> GELU(erf) -> Linear(4E,E)
//   logits = ln_f(x) · tok_embᵀ                              (B, T, V), head tied, no bias
//
// The modded-nanogpt speedrun's (`--model modern`):
//   x = tok_emb(idx)                                        (B, T, E), no position table
//   for each block:  x = x + attn(ln1(x), causal)            q, k = rope(rms_norm(q)), rope(rms_norm(k)) per head
//                    x = x + mlp(ln2(x))                     Linear(E,4E) -> relu² -> Linear(4E,E)
//   logits = softcap·tanh(lm_head(ln_f(x)) / softcap)       (B, T, V), untied head
// with RMSNorm without a gain for ln1, ln2 and ln_f, no biases, and attn.out_proj, mlp.proj and
// lm_head initialised to zero (each block starts as the identity, the model as uniform).
// Two more parts of modded-nanogpt's, each off unless its field is set (models/gpt_config.h):
//   value embeddings (value_embeds = N): in layer i with table k (the first N layers and the last
//     N, tables 0..N−1 in each), v ← λ_v·v + λ_e·value_embeds[k](idx) before attending, the
//     two λ the row value_lambdas[r] of that layer (r its rank among those layers);
//   U-net skips (unet_skips): with h = n_layer/2, block n_layer − 1 − i's input gets
//     skip_weights[h − 1 − i]·(output of block i) added, i < h;
//   the x0 residual (x0_residual): then each block's input x ← x_lambda·x + x0_lambda·x0, x0
//     the embedding, the block's own two scalars.
//
// Parameter names match the PyTorch twins (tests/parity/twin.py, bench/torch_speedrun.py) so
// that load_state_dict(strict=True) works there: tok_emb.weight, pos_emb.weight (GPT),
// blocks.{i}.ln1.*, blocks.{i}.attn.{in_proj_weight,in_proj_bias,out_proj.weight,out_proj.bias},
// blocks.{i}.ln2.*, blocks.{i}.mlp.fc.*, blocks.{i}.mlp.proj.*, ln_f.*, lm_head.weight (modern),
// value_embeds.{k}.weight, value_lambdas, skip_weights, blocks.{i}.x_lambda, blocks.{i}.x0_lambda
// (modern, when on).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/gpt_config.h"
#include "models/language_model.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_list.h"
#include "nn/rms_norm.h"

namespace ag::models {

// A block's or the head's norm: LayerNorm for the GPT, RMSNorm for the modern architecture.
std::shared_ptr<nn::Module> make_norm(const GPTConfig& cfg, DType dtype);

class MLP : public nn::Module {
 public:
  MLP(const GPTConfig& cfg, DType dtype, Generator& gen);
  Tensor forward(const Tensor& x) const override;  // (B, T, E) -> (B, T, E)
  std::shared_ptr<nn::Linear> fc, proj;
  std::shared_ptr<nn::Dropout> drop;
  bool relu_squared;
};

class Block : public nn::Module {
 public:
  Block(const GPTConfig& cfg, DType dtype, Generator& gen);
  // (B, T, E), causal. With attn_weights, also stores the attention's per-head weights
  // (B, H, T, T) there. value_mix: the values mixed with a value embedding (nn/attention.h).
  Tensor forward(const Tensor& x, Tensor* attn_weights = nullptr, const nn::ValueMix& value_mix = {}) const;
  Tensor forward_cached(const Tensor& x, nn::KVCache& cache, const nn::ValueMix& value_mix = {}) const;  // (B, T_new, E), inference
  std::shared_ptr<nn::Module> ln1, ln2;  // make_norm's
  std::shared_ptr<nn::MultiheadAttention> attn;
  std::shared_ptr<MLP> mlp;
  std::shared_ptr<nn::Dropout> resid_drop;
  Tensor x_lambda, x0_lambda;  // (1) each, the x0 residual's; undefined without
  int64_t block_size;
};

class TransformerLM : public LanguageModel, public AttentionIntrospection {
 public:
  // Initialised as its modules describe it: the GPT as nanoGPT (N(0, 0.02) for embeddings
  // and matrices, residual projections at 0.02/√(2·n_layer), zero biases, LayerNorm 1 and 0),
  // the modern one as the speedrun (tok_emb N(0, 1), in_proj and mlp.fc U(−b, b) with
  // b = √3·0.5/√E, i.e. std 0.5/√E, out_proj, mlp.proj and lm_head zero; as modded-nanogpt,
  // the value tables N(0, 1), value_lambdas 0.5, skip_weights 1, x_lambda 1, x0_lambda 0).
  // All draws from gen.
  TransformerLM(const GPTConfig& cfg, DType dtype = DType::Float32, Generator& gen = default_generator());

  Tensor forward(const Tensor& idx) const override;               // int64 (B, T) -> logits (B, T, V)
  // forward(idx), also returning each block's attention weights per head, (B, H, T, T) with
  // row i the weights of query i over the keys (zero for the keys j > i it may not see).
  Tensor forward_with_attention(const Tensor& idx, std::vector<Tensor>& attn_weights) const override;
  Tensor loss(const Tensor& idx, const Tensor& targets) const override;  // mean next-token cross-entropy
  // Appends max_new_tokens sampled tokens to `prompt` (ids); needs a non-empty prompt.
  // The model sees at most block_size tokens: when the window is full it restarts from the
  // last block_size/2 tokens, with or without the KV cache, so both paths see the same context.
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, const SampleOptions& opt,
                                Generator& gen) const override;
  // generate() for several prompts of one length, decoded in lockstep, so that each step reads
  // the weights once for all of them (float32: models/decode.h). Each step samples row 0, 1, ...
  // in order from `gen`; on_token sees each row's new token in that order, and returning false
  // stops after the step.
  std::vector<std::vector<int64_t>> generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                                                   const SampleOptions& opt, Generator& gen) const;

  const GPTConfig& config() const { return cfg_; }

  // Its parameters (models/param_table.h), before anything is built: the constructor's
  // description of one layer, on a meta basis (nn::MetaInit), repeated; checked arithmetic.
  static ParamTable param_table(const GPTConfig& c);
  // Floats autograd keeps per position for a backward (the memory estimate's activations).
  static int64_t activation_floats_per_position(const GPTConfig& c);

  // LanguageModel
  ModelConfig model_config() const override { return ModelConfig(cfg_); }
  std::string summary() const override;
  ParamTable parameter_table() const override { return param_table(cfg_); }
  const AttentionIntrospection* attention() const override { return this; }

  std::shared_ptr<nn::Embedding> tok_emb, pos_emb;  // pos_emb: null with rope
  std::shared_ptr<nn::ModuleList<nn::Embedding>> value_embeds;  // value_embeds tables (V, E); null without
  Tensor value_lambdas;  // (2·value_embeds, 2): λ_v, λ_e of each layer with a value table; undefined without
  Tensor skip_weights;   // (n_layer/2): the U-net skips' weights; undefined without
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  std::shared_ptr<nn::Module> ln_f;     // make_norm's
  std::shared_ptr<nn::Linear> lm_head;  // null when the head is tied to tok_emb

 private:
  // Builds `layers` of cfg.n_layer layers: param_table's model of one layer.
  TransformerLM(const GPTConfig& cfg, DType dtype, Generator& gen, int64_t layers);
  // Logits (B, T, V) for ids whose first position is `pos0`, through the caches (the autograd
  // ops under no-grad: the path for float64 models; float32 ones decode with models/decode.h).
  Tensor forward_cached(const Tensor& idx, int64_t pos0, std::vector<nn::KVCache>& caches) const;
  Tensor embed(const Tensor& idx, int64_t pos0) const;  // (B, T, E)
  // x (B, T, E) through every block, block(i, x, value mix) running block i, with the value
  // embeddings of idx (B, T) and the U-net skips between the blocks.
  using RunBlock = std::function<Tensor(size_t, const Tensor&, const nn::ValueMix&)>;
  Tensor through_blocks(const Tensor& idx, Tensor x, const RunBlock& block) const;
  Tensor head(const Tensor& x) const;                   // ln_f, the head's projection, the soft-cap

  GPTConfig cfg_;
};

}  // namespace ag::models
