#include "models/model_size.h"

#include "autograd/checked.h"

namespace ag::models {

using checked::add;
using checked::mul;

namespace {
int64_t sum_numel(const ParameterShapes& shapes, const char* what) {
  int64_t n = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t k = 1;
    for (int64_t d : shape) k = mul(k, d, what);
    n = add(n, k, what);
  }
  return n;
}

// Bytes of weights (+ gradients and AdamW's two moments when training) and of `floats`
// activations (+ their gradients when training).
int64_t total_bytes(int64_t params, int64_t activation_floats, bool training, const char* what) {
  return add(mul(training ? 16 : 4, params, what), mul(training ? 8 : 4, activation_floats, what), what);
}
}  // namespace

// ---- GPT (models/transformer_lm.h) ----------------------------------------------------------

// The modern architecture: no position table, no biases, no norm gains, an untied head.
int64_t gpt_num_tensors(const ModelConfig& c) {
  if (c.name == "modern") return add(2, mul(4, c.n_layer, "tensors for n_layer"), "tensors");
  return add(4, mul(12, c.n_layer, "tensors for n_layer"), "tensors");
}

ParameterShapes gpt_parameter_shapes(const ModelConfig& c) {
  const char* what = "parameter shapes";
  const bool modern = c.name == "modern";
  const int64_t E = c.n_embd, E3 = mul(3, E, what), E4 = mul(4, E, what);
  ParameterShapes out;
  out.reserve(static_cast<size_t>(gpt_num_tensors(c)));
  out.emplace_back("tok_emb.weight", Shape{c.vocab_size, E});
  if (!modern) out.emplace_back("pos_emb.weight", Shape{c.block_size, E});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    if (!modern) out.emplace_back(b + "ln1.weight", Shape{E});
    if (!modern) out.emplace_back(b + "ln1.bias", Shape{E});
    out.emplace_back(b + "attn.in_proj_weight", Shape{E3, E});
    if (!modern) out.emplace_back(b + "attn.in_proj_bias", Shape{E3});
    out.emplace_back(b + "attn.out_proj.weight", Shape{E, E});
    if (!modern) out.emplace_back(b + "attn.out_proj.bias", Shape{E});
    if (!modern) out.emplace_back(b + "ln2.weight", Shape{E});
    if (!modern) out.emplace_back(b + "ln2.bias", Shape{E});
    out.emplace_back(b + "mlp.fc.weight", Shape{E4, E});
    if (!modern) out.emplace_back(b + "mlp.fc.bias", Shape{E4});
    out.emplace_back(b + "mlp.proj.weight", Shape{E, E4});
    if (!modern) out.emplace_back(b + "mlp.proj.bias", Shape{E});
  }
  if (modern) {
    out.emplace_back("lm_head.weight", Shape{c.vocab_size, E});
  } else {
    out.emplace_back("ln_f.weight", Shape{E});
    out.emplace_back("ln_f.bias", Shape{E});
  }
  return out;
}

int64_t gpt_memory_bytes(const ModelConfig& c, int64_t batch, bool training) {
  const char* what = "memory estimate";
  const int64_t E = c.n_embd;
  // Parameters from the formula, not the list: n_layer may be huge. Per block 12E² + 13E (modern:
  // 12E²); embeddings (V + T)·E + 2E (modern: 2V·E, the head untied).
  const bool modern = c.name == "modern";
  const int64_t per_block = add(mul(12, mul(E, E, what), what), modern ? 0 : mul(13, E, what), what);
  int64_t params = modern ? mul(mul(2, c.vocab_size, what), E, what)
                          : add(mul(add(c.vocab_size, c.block_size, what), E, what), mul(2, E, what), what);
  params = add(params, mul(c.n_layer, per_block, what), what);
  // Floats kept per position: per block about 21E (LayerNorms, q/k/v and their per-head
  // copies, the attention output, the 4E MLP layer before and after GELU, residuals) plus
  // 3·H·T (each head's scores, weights and mask); then logits and log-softmax (2V), embeddings (4E).
  const int64_t per_layer = add(mul(21, E, what), mul(3, mul(c.n_head, c.block_size, what), what), what);
  const int64_t per_position = add(mul(c.n_layer, per_layer, what), add(mul(2, c.vocab_size, what), mul(4, E, what), what), what);
  return total_bytes(params, mul(mul(batch, c.block_size, what), per_position, what), training, what);
}

// ---- CharMLP (models/char_mlp.h) -------------------------------------------------------------

int64_t mlp_num_tensors(const ModelConfig&) { return 5; }

ParameterShapes mlp_parameter_shapes(const ModelConfig& c) {
  const char* what = "parameter shapes";
  return {{"wte.weight", Shape{add(c.vocab_size, 1, what), c.n_embd}},
          {"fc.weight", Shape{c.hidden, mul(c.block_size, c.n_embd, what)}},
          {"fc.bias", Shape{c.hidden}},
          {"head.weight", Shape{c.vocab_size, c.hidden}},
          {"head.bias", Shape{c.vocab_size}}};
}

int64_t mlp_memory_bytes(const ModelConfig& c, int64_t batch, bool training) {
  const char* what = "memory estimate";
  const int64_t params = sum_numel(mlp_parameter_shapes(c), what);
  // Per predicted position: the concatenated context (block·E), the hidden layer before and
  // after tanh (2·hidden), logits and log-softmax (2V).
  const int64_t per_position =
      add(mul(c.block_size, c.n_embd, what), add(mul(2, c.hidden, what), mul(2, c.vocab_size, what), what), what);
  return total_bytes(params, mul(mul(batch, c.block_size, what), per_position, what), training, what);
}

}  // namespace ag::models
