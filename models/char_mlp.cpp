#include "models/char_mlp.h"

#include <cmath>
#include <stdexcept>

#include "base/checked.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/deferred_init.h"

namespace ag::models {

void CharMLP::validate(const ModelConfig& c) {
  auto positive = [](int64_t v, const char* name) {
    if (v <= 0) throw std::invalid_argument(std::string("mlp: ") + name + " must be positive, got " + std::to_string(v));
  };
  positive(c.vocab_size, "vocab_size");
  positive(c.block_size, "block_size");
  positive(c.n_embd, "n_embd");
  positive(c.hidden, "hidden");
  if (c.dropout != 0) throw std::invalid_argument("mlp: has no dropout; dropout must be 0");
}

CharMLP::CharMLP(const ModelConfig& cfg, DType dtype, Generator& gen) : cfg_(cfg) {
  cfg_.name = "mlp";
  validate(cfg_);
  // PyTorch's default init, as makemore's MLP: each module's own, drawn from gen as it is
  // registered (an embedding N(0, 1), a linear layer's weight and bias U(±1/√fan_in)).
  const char* what = "parameter shapes";
  wte = register_module("wte", std::make_shared<nn::Embedding>(checked::add(cfg.vocab_size, 1, what), cfg.n_embd, dtype, gen));
  fc = register_module("fc", std::make_shared<nn::Linear>(checked::mul(cfg.block_size, cfg.n_embd, what), cfg.hidden, true,
                                                          dtype, gen));
  head = register_module("head", std::make_shared<nn::Linear>(cfg.hidden, cfg.vocab_size, true, dtype, gen));
  head->set_role("weight", OptimGroup::Decay, 1);  // the output layer, not a hidden matrix
}

ParamTable CharMLP::param_table(const ModelConfig& c) {
  // The constructor on a meta basis: the modules describe their parameters and nothing is
  // allocated or drawn, whatever sizes c claims.
  nn::MetaInit meta;
  Generator unused;
  return ParamTable::of(CharMLP(c, DType::Float32, unused));
}

int64_t CharMLP::activation_floats_per_position(const ModelConfig& c) {
  const char* what = "memory estimate";
  using checked::add;
  using checked::mul;
  // The concatenated context (block·E), the hidden layer before and after tanh (2·hidden),
  // logits and log-softmax (2V).
  return add(mul(c.block_size, c.n_embd, what), add(mul(2, c.hidden, what), mul(2, c.vocab_size, what), what), what);
}

std::string CharMLP::summary() const {
  return "mlp, context " + std::to_string(cfg_.block_size) + " characters of width " + std::to_string(cfg_.n_embd) +
         ", hidden " + std::to_string(cfg_.hidden);
}

Tensor CharMLP::logits_of(const Tensor& ctx) const {
  Shape flat = ctx.shape();  // (..., C)
  flat.back() = cfg_.block_size * cfg_.n_embd;
  const Tensor e = reshape(wte->forward(ctx), flat);  // (..., C, E) -> (..., C·E)
  return head->forward(tanh(fc->forward(e)));         // (..., H) -> (..., V)
}

Tensor CharMLP::forward(const Tensor& idx) const {
  if (idx.dtype() != DType::Int64 || idx.dim() != 2)
    throw std::invalid_argument("CharMLP: idx must be int64 (B, T), got " + describe(idx));
  const int64_t B = idx.size(0), T = idx.size(1), C = cfg_.block_size, pad = cfg_.vocab_size;
  if (T > C)
    throw std::invalid_argument("CharMLP: sequence of " + std::to_string(T) + " positions exceeds block_size " +
                                std::to_string(C));
  const Tensor x = idx.contiguous();
  const int64_t* xs = x.data<int64_t>();
  Tensor ctx = Tensor::empty({B, T, C}, DType::Int64);  // (B, T, C): the C characters up to t
  int64_t* c = ctx.data<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < C; ++j) {
        const int64_t src = t - C + 1 + j;
        *c++ = src < 0 ? pad : xs[b * T + src];
      }
  return logits_of(ctx);
}

Tensor CharMLP::loss(const Tensor& idx, const Tensor& targets) const {
  if (targets.shape() != idx.shape())
    throw std::invalid_argument("CharMLP::loss: targets " + describe(targets) + " must match idx " +
                                describe(idx));
  const Tensor logits = forward(idx);  // (B, T, V)
  const int64_t BT = idx.numel();
  return cross_entropy(reshape(logits, {BT, cfg_.vocab_size}), reshape(targets, {BT}));
}

std::vector<int64_t> CharMLP::generate(const std::vector<int64_t>& prompt, const SampleOptions& opt,
                                       Generator& gen) const {
  check_prompt(prompt, cfg_.vocab_size);
  NoGradGuard no_grad;
  const int64_t C = cfg_.block_size;
  std::vector<int64_t> seq = prompt;
  std::vector<int64_t> ctx(C);
  for (int64_t n = 0; n < opt.max_new_tokens; ++n) {
    const int64_t end = static_cast<int64_t>(seq.size());
    for (int64_t j = 0; j < C; ++j) {
      const int64_t src = end - C + j;
      ctx[j] = src < 0 ? cfg_.vocab_size : seq[src];
    }
    const auto logits = logits_of(Tensor::from_vector(ctx, {C})).to_double_vector();  // (V)
    seq.push_back(sample_token(logits, opt.temperature, opt.top_k, gen));
    if (opt.on_token && !opt.on_token(seq.back())) break;
  }
  return seq;
}

}  // namespace ag::models
