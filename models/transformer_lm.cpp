#include "models/transformer_lm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "base/checked.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "models/decode.h"
#include "nn/deferred_init.h"

namespace ag::models {

void GPTConfig::validate() const {
  auto positive = [](int64_t v, const char* name) {
    if (v <= 0) throw std::invalid_argument(std::string("GPTConfig: ") + name + " must be positive, got " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(n_layer, "n_layer");
  positive(n_head, "n_head");
  positive(n_embd, "n_embd");
  positive(block_size, "block_size");
  if (n_embd % n_head != 0)
    throw std::invalid_argument("GPTConfig: n_embd (" + std::to_string(n_embd) + ") must be divisible by n_head (" +
                                std::to_string(n_head) + ")");
  if (!(dropout >= 0 && dropout < 1)) throw std::invalid_argument("GPTConfig: dropout must be in [0, 1)");
  if (!(arch.softcap >= 0)) throw std::invalid_argument("GPTConfig: softcap must be >= 0 (0: off)");
  if (arch.rope && (n_embd / n_head) % 2 != 0)
    throw std::invalid_argument("GPTConfig: rotary embeddings need an even head size, got n_embd/n_head = " +
                                std::to_string(n_embd / n_head));
  if ((value_embeds != 0 || unet_skips || x0_residual) && arch != Architecture::modern(arch.softcap))
    throw std::invalid_argument(
        "GPTConfig: value embeddings, U-net skips and the x0 residual are parts of the modern architecture only");
  if (value_embeds < 0 || value_embeds > n_layer / 2)
    throw std::invalid_argument("GPTConfig: value_embeds must be in [0, n_layer/2] = [0, " + std::to_string(n_layer / 2) +
                                "] (the first and the last value_embeds layers each use one table), got " +
                                std::to_string(value_embeds));
  if (unet_skips && n_layer < 2)
    throw std::invalid_argument("GPTConfig: unet_skips needs at least 2 layers, got n_layer = " + std::to_string(n_layer));
}

int64_t GPTConfig::value_table_of(int64_t layer) const {
  if (layer < value_embeds) return layer;                                         // the first value_embeds layers
  if (layer >= n_layer - value_embeds) return layer - (n_layer - value_embeds);  // the last, the same tables again
  return -1;
}

int64_t GPTConfig::value_lambda_row(int64_t layer) const {
  return layer < value_embeds ? layer : value_embeds + value_table_of(layer);
}

Architecture Architecture::modern(double softcap) {
  Architecture a;
  a.rms_norm = true, a.norm_gain = false, a.rope = true, a.qk_norm = true, a.relu_squared = true, a.bias = false;
  a.tied_head = false, a.zero_init_projections = true, a.softcap = softcap;
  return a;
}

std::shared_ptr<nn::Module> make_norm(const GPTConfig& cfg, DType dtype) {
  if (cfg.arch.rms_norm) return std::make_shared<nn::RMSNorm>(cfg.n_embd, std::nullopt, cfg.arch.norm_gain, dtype);
  return std::make_shared<nn::LayerNorm>(cfg.n_embd, 1e-5, cfg.arch.norm_gain, dtype);
}

namespace {
// The init the model gives its parameters where the modules' own is not it. The GPT's is
// nanoGPT's: N(0, 0.02) for embeddings and matrices, the projections into the residual stream
// at 0.02/√(2·n_layer), zero biases (LayerNorm's 1 and 0 are its own). The speedrun's
// (zero_init_projections): tok_emb N(0, 1), the matrices that read the residual stream U(−b, b)
// with b = √3·0.5/√E (std 0.5/√E), the projections into it and the head zero.
struct Inits {
  Init tok_emb, pos_emb, reads, writes, head;
};

Inits inits_of(const GPTConfig& c) {
  const bool speedrun = c.arch.zero_init_projections;
  const Init w = Init::normal(0.02), zero = Init::zeros();
  const Init resid = Init::normal(0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer)));
  const Init reads = Init::uniform(std::sqrt(3.0) * 0.5 / std::sqrt(static_cast<double>(c.n_embd)));
  if (speedrun) return {Init::normal(1.0), w, reads, zero, zero};
  return {w, w, w, resid, w};
}

// A linear layer of the model: its weight initialised as given, its bias (if any) zero.
void init_linear(nn::Linear& l, const Init& weight, bool bias, Generator& gen) {
  l.set_init("weight", weight, gen);
  if (bias) l.set_init("bias", Init::zeros(), gen);
}
}  // namespace

// ---- MLP ------------------------------------------------------------------------------------------

MLP::MLP(const GPTConfig& cfg, DType dtype, Generator& gen) : relu_squared(cfg.arch.relu_squared) {
  const int64_t E = cfg.n_embd, E4 = checked::mul(4, E, "the MLP's width");
  const Inits init = inits_of(cfg);
  fc = register_module("fc", std::make_shared<nn::Linear>(E, E4, cfg.arch.bias, dtype, gen));
  proj = register_module("proj", std::make_shared<nn::Linear>(E4, E, cfg.arch.bias, dtype, gen));
  init_linear(*fc, init.reads, cfg.arch.bias, gen);
  init_linear(*proj, init.writes, cfg.arch.bias, gen);
  drop = register_module("drop", std::make_shared<nn::Dropout>(cfg.dropout, gen));
}

// proj(gelu(fc(x))) as one fused node (autograd/ops/fused_mlp.cpp): both GEMMs with the bias
// and GELU between them per block of rows, and the hidden activation recomputed in the backward
// instead of being kept. relu²: proj(relu(fc(x))²).
Tensor MLP::forward(const Tensor& x) const {
  if (relu_squared) {
    const Tensor h = relu(fc->forward(x));
    return drop->forward(proj->forward(mul(h, h)));
  }
  return drop->forward(gelu_mlp(x, fc->weight, fc->bias, proj->weight, proj->bias));
}

// ---- Block ----------------------------------------------------------------------------------------

Block::Block(const GPTConfig& cfg, DType dtype, Generator& gen) : block_size(cfg.block_size) {
  if (cfg.x0_residual) {  // scalars: NoDecay (AdamW at --lr, never Muon), the model as without it at first
    x_lambda = register_parameter("x_lambda", {{1}, Init::ones(), OptimGroup::NoDecay, 0}, dtype, gen);
    x0_lambda = register_parameter("x0_lambda", {{1}, Init::zeros(), OptimGroup::NoDecay, 0}, dtype, gen);
  }
  ln1 = register_module("ln1", make_norm(cfg, dtype));
  nn::AttentionOptions opts;
  opts.qk_norm = cfg.arch.qk_norm, opts.rope = cfg.arch.rope;
  attn = register_module("attn", std::make_shared<nn::MultiheadAttention>(cfg.n_embd, cfg.n_head, cfg.dropout, cfg.arch.bias,
                                                                          /*batch_first=*/true, dtype, gen, opts));
  const Inits init = inits_of(cfg);  // the biases are zero, as attention's own
  attn->set_init("in_proj_weight", init.reads, gen);  // q, k, v
  attn->out_proj->set_init("weight", init.writes, gen);
  ln2 = register_module("ln2", make_norm(cfg, dtype));
  mlp = register_module("mlp", std::make_shared<MLP>(cfg, dtype, gen));
  resid_drop = register_module("resid_drop", std::make_shared<nn::Dropout>(cfg.dropout, gen));
}

Tensor Block::forward(const Tensor& x, Tensor* attn_weights, const nn::ValueMix& value_mix) const {
  const Tensor h = ln1->forward(x);
  auto a = attn->forward(h, h, h, Tensor(), /*need_weights=*/attn_weights != nullptr, Tensor(),
                         /*average_attn_weights=*/false, /*is_causal=*/true, value_mix);
  if (attn_weights) *attn_weights = a.weights;
  const Tensor x1 = x + resid_drop->forward(a.output);
  return x1 + mlp->forward(ln2->forward(x1));
}

Tensor Block::forward_cached(const Tensor& x, nn::KVCache& cache, const nn::ValueMix& value_mix) const {
  const Tensor x1 = x + attn->forward_cached(ln1->forward(x), cache, block_size, value_mix);
  return x1 + mlp->forward(ln2->forward(x1));
}

// ---- TransformerLM ---------------------------------------------------------------------------------

TransformerLM::TransformerLM(const GPTConfig& cfg, DType dtype, Generator& gen)
    : TransformerLM(cfg, dtype, gen, cfg.n_layer) {}

TransformerLM::TransformerLM(const GPTConfig& cfg, DType dtype, Generator& gen, int64_t layers) : cfg_(cfg) {
  cfg.validate();
  // The modules describe their parameters and draw nothing; the model changes the init it
  // wants (inits_of), then init() draws every parameter once, in order. The modules' own init
  // is skipped in gen's stream: the stream of every seed has always included those draws, so
  // every seed still gives the parameters it gave.
  nn::DeferredInit deferred(nn::DeferredInit::ModuleDraws::Skipped);
  const Inits init = inits_of(cfg);
  tok_emb = register_module("tok_emb", std::make_shared<nn::Embedding>(cfg.vocab_size, cfg.n_embd, dtype, gen));
  tok_emb->set_init("weight", init.tok_emb, gen);
  if (cfg.arch.tied_head) tok_emb->set_role("weight", OptimGroup::Decay, 1);  // also the head: a matmul per position
  if (!cfg.arch.rope) {
    pos_emb = register_module("pos_emb", std::make_shared<nn::Embedding>(cfg.block_size, cfg.n_embd, dtype, gen));
    pos_emb->set_init("weight", init.pos_emb, gen);
  }
  // modded-nanogpt's parts (off: nothing registered, nothing drawn). The value tables are looked
  // up only, as tok_emb (N(0, 1), Decay, no matmul: the optimizer's lookup tables, --embed-lr).
  // The scalars are NoDecay (no weight decay pulling a part towards off; AdamW at --lr, never
  // Muon), value_lambdas 0.5 (v and its embedding in equal parts), skip_weights 1.
  if (cfg.value_embeds > 0) {
    value_embeds = register_module("value_embeds", std::make_shared<nn::ModuleList<nn::Embedding>>());
    for (int64_t k = 0; k < cfg.value_embeds; ++k)
      value_embeds->push_back(std::make_shared<nn::Embedding>(cfg.vocab_size, cfg.n_embd, dtype, gen));
    value_lambdas = register_parameter(
        "value_lambdas", {{checked::mul(2, cfg.value_embeds, "value_lambdas"), 2}, Init::constant(0.5), OptimGroup::NoDecay, 0},
        dtype, gen);
  }
  if (cfg.unet_skips)
    skip_weights = register_parameter("skip_weights", {{cfg.unet_pairs()}, Init::ones(), OptimGroup::NoDecay, 0}, dtype, gen);
  drop = register_module("drop", std::make_shared<nn::Dropout>(cfg.dropout, gen));
  blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (int64_t i = 0; i < layers; ++i) blocks->push_back(std::make_shared<Block>(cfg, dtype, gen));
  ln_f = register_module("ln_f", make_norm(cfg, dtype));
  if (!cfg.arch.tied_head) {
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(cfg.n_embd, cfg.vocab_size, false, dtype, gen));
    lm_head->set_init("weight", init.head, gen);
    lm_head->set_role("weight", OptimGroup::Decay, 1);  // the output layer, not a hidden matrix
  }
  deferred.init(*this, gen);
}

ParamTable TransformerLM::param_table(const GPTConfig& c) {
  // The constructor on a meta basis with one layer: the modules describe their parameters and
  // nothing is allocated or drawn, whatever sizes c claims; the table repeats the layer.
  nn::MetaInit meta;
  Generator unused;
  const TransformerLM one_layer(c, DType::Float32, unused, 1);
  ParamTable t = ParamTable::of(one_layer, "blocks.", c.n_layer);
  const int64_t E = c.n_embd;
  // Each position's query against block_size keys, and the weights against as many values,
  // all heads together (nanoGPT counts the full square, masked or not).
  t.activation_matmul_flops_per_position =
      static_cast<double>(c.n_layer) * 2 * 2 * static_cast<double>(c.block_size) * static_cast<double>(E);
  return t;
}

int64_t TransformerLM::activation_floats_per_position(const GPTConfig& c) {
  const char* what = "memory estimate";
  using checked::add;
  using checked::mul;
  const int64_t E = c.n_embd;
  // Per block about 21E (norms, q/k/v and their per-head copies, the attention output, the 4E
  // MLP layer before and after its activation, residuals) plus 3·H·T (each head's scores,
  // weights and mask); then logits and log-softmax (2V), embeddings (4E). A layer with a value
  // table 4E more (the lookup, λ_v·v, λ_e·ve, their sum); a U-net skip 2E (w·s and the sum);
  // the x0 residual 3E per layer (λ·x, μ·x0, their sum).
  const int64_t per_layer = add(mul(21, E, what), mul(3, mul(c.n_head, c.block_size, what), what), what);
  const int64_t value_layers = mul(2, c.value_embeds, what), x0_layers = c.x0_residual ? c.n_layer : 0;
  const int64_t parts =
      add(add(mul(value_layers, 4, what), mul(c.unet_pairs(), 2, what), what), mul(x0_layers, 3, what), what);
  return add(add(mul(c.n_layer, per_layer, what), mul(parts, E, what), what),
             add(mul(2, c.vocab_size, what), mul(4, E, what), what), what);
}

Tensor TransformerLM::embed(const Tensor& idx, int64_t pos0) const {
  if (idx.dtype() != DType::Int64 || idx.dim() != 2)
    throw std::invalid_argument("TransformerLM: idx must be int64 (B, T), got " + describe(idx));
  const int64_t T = idx.size(1);
  if (pos0 + T > cfg_.block_size)
    throw std::invalid_argument("TransformerLM: sequence of " + std::to_string(pos0 + T) + " positions exceeds block_size " +
                                std::to_string(cfg_.block_size));
  if (!pos_emb) return drop->forward(tok_emb->forward(idx));  // rope: positions enter in the attention
  Tensor pos = Tensor::empty({T}, DType::Int64);
  for (int64_t t = 0; t < T; ++t) pos.data<int64_t>()[t] = pos0 + t;
  return drop->forward(tok_emb->forward(idx) + pos_emb->forward(pos));  // (B, T, E) + (T, E)
}

Tensor TransformerLM::head(const Tensor& x) const {
  const Tensor h = ln_f->forward(x);
  const Tensor logits = linear(h, lm_head ? lm_head->weight : tok_emb->weight);  // (B, T, E) · (V, E)ᵀ -> (B, T, V)
  return cfg_.arch.softcap > 0 ? softcap(logits, cfg_.arch.softcap) : logits;
}

Tensor TransformerLM::through_blocks(const Tensor& idx, Tensor x, const RunBlock& block) const {
  const auto L = static_cast<int64_t>(blocks->size()), h = cfg_.unet_pairs();
  std::vector<Tensor> ve;  // each value table's lookup of idx, (B, T, E)
  if (value_embeds)
    for (const auto& table : *value_embeds) ve.push_back(table->forward(idx));
  std::vector<Tensor> kept;  // the outputs of blocks 0 .. h−1, for the U-net skips
  const Tensor x0 = x;       // the embedding, for the x0 residual
  for (int64_t i = 0; i < L; ++i) {
    if (i >= L - h) x = x + mul(kept[static_cast<size_t>(L - 1 - i)], select(skip_weights, 0, i - (L - h)));  // + w·(B, T, E)
    const Block& b = (*blocks)[static_cast<size_t>(i)];
    if (cfg_.x0_residual) x = add(mul(x, b.x_lambda), mul(x0, b.x0_lambda));  // (B, T, E) · (1) each
    nn::ValueMix mix;
    if (const int64_t k = cfg_.value_table_of(i); k >= 0)
      mix = {ve[static_cast<size_t>(k)], select(value_lambdas, 0, cfg_.value_lambda_row(i))};  // (B, T, E), (2)
    x = block(static_cast<size_t>(i), x, mix);
    if (i < h) kept.push_back(x);
  }
  return x;
}

Tensor TransformerLM::forward(const Tensor& idx) const {
  const Tensor x = through_blocks(idx, embed(idx, 0), [&](size_t i, const Tensor& xi, const nn::ValueMix& mix) {
    return (*blocks)[i].forward(xi, nullptr, mix);
  });
  return head(x);
}

Tensor TransformerLM::forward_with_attention(const Tensor& idx, std::vector<Tensor>& attn_weights) const {
  attn_weights.assign(blocks->size(), Tensor());
  const Tensor x = through_blocks(idx, embed(idx, 0), [&](size_t i, const Tensor& xi, const nn::ValueMix& mix) {
    return (*blocks)[i].forward(xi, &attn_weights[i], mix);
  });
  return head(x);
}

Tensor TransformerLM::loss(const Tensor& idx, const Tensor& targets) const {
  if (targets.shape() != idx.shape())
    throw std::invalid_argument("TransformerLM::loss: targets " + describe(targets) + " must match idx " + describe(idx));
  const Tensor logits = forward(idx);  // (B, T, V)
  const int64_t BT = idx.numel();
  return cross_entropy(reshape(logits, {BT, cfg_.vocab_size}), reshape(targets, {BT}));
}

Tensor TransformerLM::forward_cached(const Tensor& idx, int64_t pos0, std::vector<nn::KVCache>& caches) const {
  const Tensor x = through_blocks(idx, embed(idx, pos0), [&](size_t i, const Tensor& xi, const nn::ValueMix& mix) {
    return (*blocks)[i].forward_cached(xi, caches[i], mix);
  });
  return head(x);
}

std::string TransformerLM::summary() const {
  std::string s = std::to_string(cfg_.n_layer) + " layers, " + std::to_string(cfg_.n_head) + " heads, " +
                  std::to_string(cfg_.n_embd) + " wide, block " + std::to_string(cfg_.block_size);
  if (cfg_.arch == Architecture()) return s;
  char cap[32];
  std::snprintf(cap, sizeof cap, "%g", cfg_.arch.softcap);
  s += "; RoPE, RMSNorm, QK-norm, relu², untied head" + (cfg_.arch.softcap > 0 ? std::string(", soft-cap ") + cap : "");
  if (cfg_.value_embeds > 0) s += ", " + std::to_string(cfg_.value_embeds) + " value embedding" + (cfg_.value_embeds > 1 ? "s" : "");
  if (cfg_.unet_skips) s += ", U-net skips";
  if (cfg_.x0_residual) s += ", x0 residual";
  return s;
}

std::vector<int64_t> TransformerLM::generate(const std::vector<int64_t>& prompt, const SampleOptions& opt,
                                             Generator& gen) const {
  return generate_batch({prompt}, opt, gen)[0];
}

std::vector<std::vector<int64_t>> TransformerLM::generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                                                                const SampleOptions& opt, Generator& gen) const {
  if (prompts.empty()) throw std::invalid_argument("generate: needs at least one prompt");
  for (const auto& p : prompts) {
    check_prompt(p, cfg_.vocab_size);
    if (p.size() != prompts[0].size())
      throw std::invalid_argument("generate: the prompts of a batch must have one length, got " +
                                  std::to_string(p.size()) + " and " + std::to_string(prompts[0].size()));
  }
  NoGradGuard no_grad;
  const int64_t B = static_cast<int64_t>(prompts.size()), V = cfg_.vocab_size;
  const int64_t block = cfg_.block_size, keep = std::max<int64_t>(1, block / 2);
  std::vector<std::vector<int64_t>> seqs = prompts;
  // The window is seq[start, end) of every row; it is what the model conditions on.
  int64_t start = std::max<int64_t>(0, static_cast<int64_t>(prompts[0].size()) - block);
  // float32: the inference path, which knows no dropout; else (and to sample with dropout in
  // training mode) the autograd ops.
  std::optional<Decoder> decoder;
  if (opt.use_cache && opt.max_new_tokens > 0 && Decoder::supports(*this) && !(is_training() && cfg_.dropout > 0))
    decoder.emplace(*this, B);
  std::vector<nn::KVCache> caches(blocks->size());
  int64_t cached = 0;  // tokens of the window already in the caches
  std::vector<int64_t> ids;
  std::vector<double> last(static_cast<size_t>(V));
  for (int64_t n = 0; n < opt.max_new_tokens; ++n) {
    const int64_t end = static_cast<int64_t>(seqs[0].size());
    if (end - start > block) {  // window full: restart it from the last `keep` tokens
      start = end - keep;
      cached = 0;
      for (auto& c : caches) c.reset();
      if (decoder) decoder->reset();
    }
    const int64_t from = start + (opt.use_cache ? cached : 0), T = end - from;
    ids.clear();
    for (const auto& s : seqs) ids.insert(ids.end(), s.begin() + from, s.end());  // (B, T)
    const float* logits_f = nullptr;  // (B, V) from the decoder
    std::vector<double> logits_d;     // (B, V) from the ops
    if (decoder) {
      logits_f = decoder->forward(ids.data(), T);
    } else {
      const Tensor idx = Tensor::from_vector(ids, {B, T});
      const Tensor logits = opt.use_cache ? forward_cached(idx, cached, caches) : forward(idx);  // (B, T, V)
      logits_d = narrow(logits, 1, T - 1, 1).to_double_vector();
    }
    if (opt.use_cache) cached = end - start;
    bool go = true;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t v = 0; v < V; ++v) last[v] = decoder ? logits_f[b * V + v] : logits_d[b * V + v];
      seqs[b].push_back(sample_token(last, opt.temperature, opt.top_k, gen));
      if (opt.on_token && !opt.on_token(seqs[b].back())) go = false;
    }
    if (!go) break;
  }
  return seqs;
}

}  // namespace ag::models
