#include "models/gpt_size.h"

#include "autograd/checked.h"

namespace ag::models {

using checked::add;
using checked::mul;

int64_t gpt_num_tensors(const GPTConfig& c) { return add(4, mul(12, c.n_layer, "tensors for n_layer"), "tensors"); }

int64_t gpt_num_parameters(const GPTConfig& c) {
  const char* what = "parameter count";
  const int64_t E = c.n_embd;
  const int64_t E2 = mul(E, E, what);
  // Per block: 2 LayerNorms (2E each), in_proj (3E² + 3E), out_proj (E² + E), fc (4E² + 4E),
  // proj (4E² + E): 12E² + 13E.
  const int64_t per_block = add(mul(12, E2, what), mul(13, E, what), what);
  int64_t n = add(mul(c.vocab_size, E, what), mul(c.block_size, E, what), what);  // tok_emb, pos_emb
  n = add(n, mul(c.n_layer, per_block, what), what);
  return add(n, mul(2, E, what), what);  // ln_f
}

std::vector<std::pair<std::string, Shape>> gpt_parameter_shapes(const GPTConfig& c) {
  const int64_t E = c.n_embd;
  std::vector<std::pair<std::string, Shape>> out;
  out.reserve(static_cast<size_t>(gpt_num_tensors(c)));
  out.emplace_back("tok_emb.weight", Shape{c.vocab_size, E});
  out.emplace_back("pos_emb.weight", Shape{c.block_size, E});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    out.emplace_back(b + "ln1.weight", Shape{E});
    out.emplace_back(b + "ln1.bias", Shape{E});
    out.emplace_back(b + "attn.in_proj_weight", Shape{3 * E, E});
    out.emplace_back(b + "attn.in_proj_bias", Shape{3 * E});
    out.emplace_back(b + "attn.out_proj.weight", Shape{E, E});
    out.emplace_back(b + "attn.out_proj.bias", Shape{E});
    out.emplace_back(b + "ln2.weight", Shape{E});
    out.emplace_back(b + "ln2.bias", Shape{E});
    out.emplace_back(b + "mlp.fc.weight", Shape{4 * E, E});
    out.emplace_back(b + "mlp.fc.bias", Shape{4 * E});
    out.emplace_back(b + "mlp.proj.weight", Shape{E, 4 * E});
    out.emplace_back(b + "mlp.proj.bias", Shape{E});
  }
  out.emplace_back("ln_f.weight", Shape{E});
  out.emplace_back("ln_f.bias", Shape{E});
  return out;
}

namespace {
// Floats kept per position for one pass of `rows` sequences: per block about 21E for the
// LayerNorms, q/k/v and their per-head copies, the attention output, the MLP's 4E hidden
// layer before and after GELU, and the residuals, plus 3·H·T for the scores, weights and
// mask of each head; then the logits and their log-softmax (2V) and the embeddings (4E).
int64_t activation_floats(const GPTConfig& c, int64_t rows) {
  const char* what = "activation size";
  const int64_t positions = mul(rows, c.block_size, what);
  const int64_t scores = mul(3, mul(c.n_head, c.block_size, what), what);
  const int64_t per_block = add(mul(21, c.n_embd, what), scores, what);
  int64_t per_position = mul(c.n_layer, per_block, what);
  per_position = add(per_position, add(mul(2, c.vocab_size, what), mul(4, c.n_embd, what), what), what);
  return mul(positions, per_position, what);
}
}  // namespace

int64_t gpt_training_bytes(const GPTConfig& c, int64_t batch) {
  const char* what = "training memory";
  // float32: weights, gradients, exp_avg, exp_avg_sq; activations and their gradients.
  const int64_t params = mul(16, gpt_num_parameters(c), what);
  return add(params, mul(8, activation_floats(c, batch), what), what);
}

int64_t gpt_inference_bytes(const GPTConfig& c) {
  const char* what = "inference memory";
  return add(mul(4, gpt_num_parameters(c), what), mul(4, activation_floats(c, 1), what), what);
}

}  // namespace ag::models
