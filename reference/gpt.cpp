// The character GPT in the reference's ops, top to bottom (nanoGPT's model.py, in C++):
//
//   x = tok_emb(idx) + pos_emb(0 .. T−1)              (B, T, E)
//   for each block:  x = x + attn(ln1(x))             causal self-attention
//                    x = x + mlp(ln2(x))              Linear(E, 4E) → GELU → Linear(4E, E)
//   logits = ln_f(x)·tok_embᵀ                         (B, T, V): the head shares the token table
//   loss = cross_entropy(logits, targets)
//
// Its backward is the walk's (tensor.cpp): backward(loss) fills every parameter's grad.
#include "reference/gpt.h"

#include <stdexcept>

namespace ag::ref {

// ---- multihead_attention ---------------------------------------------------------------------
//   q, k, v = the three projections (query·Wqᵀ + bq, key·Wkᵀ + bk, value·Wvᵀ + bv), where Wq, Wk,
//             Wv are rows [0, E), [E, 2E), [2E, 3E) of in_proj: the first, second and third E
//             outputs of the packed projection
//   each split into H heads of d = E/H:  (N, L, E) → (N, L, H, d) → (N, H, L, d)
//   o = attention(q, k, v) per head      (N, H, L, d)
//   output = merge(o)·out_projᵀ + bias   heads side by side again: (N, L, E)

Attention multihead_attention(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionWeights& w,
                              int64_t num_heads, const Tensor& hidden, const Tensor& mask) {
  const int64_t N = query->shape[0], E = query->shape[2], d = E / num_heads;
  auto project = [&](const Tensor& x, int64_t part) {  // part 0, 1, 2: q, k, v
    return narrow(linear(x, w.in_proj_weight, w.in_proj_bias), part * E, E);
  };
  auto split_heads = [&](const Tensor& x) {
    return transpose(reshape(x, {N, x->shape[1], num_heads, d}), 1, 2);
  };
  Attention a = attention(split_heads(project(query, 0)), split_heads(project(key, 1)), split_heads(project(value, 2)),
                          hidden, mask);
  const Tensor merged = reshape(transpose(a.output, 1, 2), {N, query->shape[1], E});
  a.output = linear(merged, w.out_proj_weight, w.out_proj_bias);
  return a;
}

// ---- GPT -------------------------------------------------------------------------------------

GPT::GPT(const GPTConfig& c) : config(c) {
  const int64_t V = c.vocab_size, E = c.n_embd;
  auto param = [&](const std::string& name, Shape shape, double fill = 0) {
    params[name] = tensor(shape, std::vector<double>(static_cast<size_t>(numel(shape)), fill), /*requires_grad=*/true);
  };
  auto norm = [&](const std::string& name) { param(name + ".weight", {E}, 1), param(name + ".bias", {E}); };
  param("tok_emb.weight", {V, E});
  param("pos_emb.weight", {c.block_size, E});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    norm(b + "ln1");
    param(b + "attn.in_proj_weight", {3 * E, E}), param(b + "attn.in_proj_bias", {3 * E});
    param(b + "attn.out_proj.weight", {E, E}), param(b + "attn.out_proj.bias", {E});
    norm(b + "ln2");
    param(b + "mlp.fc.weight", {4 * E, E}), param(b + "mlp.fc.bias", {4 * E});
    param(b + "mlp.proj.weight", {E, 4 * E}), param(b + "mlp.proj.bias", {E});
  }
  norm("ln_f");
}

Tensor GPT::forward(const Tensor& idx) const {
  if (idx->shape.size() != 2 || idx->shape[1] > config.block_size)
    throw std::invalid_argument("reference GPT: ids must be (B, T) with T <= block_size");
  const int64_t T = idx->shape[1];
  std::vector<double> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[t] = static_cast<double>(t);
  // x = tok_emb(idx) + pos_emb(0 .. T−1): (B, T, E) + (T, E), broadcast over B
  Tensor x = add(embedding(idx, p("tok_emb.weight")), embedding(tensor({T}, positions), p("pos_emb.weight")));
  const Tensor causal = causal_mask(T, T);  // (T, T): query t sees keys 0 .. t
  for (int64_t i = 0; i < config.n_layer; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    // x = x + attn(ln1(x))
    const Tensor h = layer_norm(x, p(b + "ln1.weight"), p(b + "ln1.bias"));
    const AttentionWeights w{p(b + "attn.in_proj_weight"), p(b + "attn.in_proj_bias"), p(b + "attn.out_proj.weight"),
                             p(b + "attn.out_proj.bias")};
    x = add(x, multihead_attention(h, h, h, w, config.n_head, causal).output);
    // x = x + mlp(ln2(x)) = x + proj(gelu(fc(ln2(x))))
    const Tensor h2 = layer_norm(x, p(b + "ln2.weight"), p(b + "ln2.bias"));
    const Tensor fc = linear(h2, p(b + "mlp.fc.weight"), p(b + "mlp.fc.bias"));  // (B, T, 4E)
    x = add(x, linear(gelu(fc), p(b + "mlp.proj.weight"), p(b + "mlp.proj.bias")));
  }
  // logits = ln_f(x)·tok_embᵀ: (B, T, E)·(E, V)
  return matmul(layer_norm(x, p("ln_f.weight"), p("ln_f.bias")), transpose(p("tok_emb.weight"), 0, 1));
}

Tensor GPT::loss(const Tensor& idx, const Tensor& targets) const {
  const Tensor logits = forward(idx);  // (B, T, V)
  const int64_t BT = numel(idx->shape);
  return cross_entropy(reshape(logits, {BT, config.vocab_size}), reshape(targets, {BT}));
}

}  // namespace ag::ref
