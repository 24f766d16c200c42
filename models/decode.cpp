#include "models/decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/rope.h"
#include "autograd/kernels/vec.h"
#include "autograd/parallel.h"
#include "models/transformer_lm.h"

namespace ag::models {

namespace decode {

namespace {
// Up to this many rows (decoding a batch) a projection is memory-bound and reads the blocked
// copy; more rows (a prefill) are compute-bound and run as one GEMM per thread on W as stored.
constexpr int64_t kFewRows = 8;
// Below about this many multiply-adds per chunk, handing work to another thread costs more
// than it saves.
constexpr int64_t kChunkWork = int64_t(1) << 15;
}  // namespace

Weight::Weight(const float* w, const float* bias, int64_t n, int64_t k)
    : W(w), b(bias), N(n), K(k), blocked(static_cast<size_t>(n * k)) {
  // Block i holds output features [i·kBlock, i·kBlock + width) as a (K, width) row-major matrix.
  parallel::parallel_for((N + kBlock - 1) / kBlock, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t n0 = blk * kBlock, width = std::min(kBlock, N - n0);
      float* dst = blocked.data() + n0 * K;
      for (int64_t j = 0; j < width; ++j)
        for (int64_t k2 = 0; k2 < K; ++k2) dst[k2 * width + j] = W[(n0 + j) * K + k2];
    }
  });
}

void attend_row(const float* q, const float* K, const float* V, int64_t S, int64_t hd, float scale, float* scores,
                float* out) {
  // One-row GEMMs rather than GEMVs: OpenBLAS's small-matrix kernels read the cache rows
  // about 1.3x faster here than its GEMV kernels do.
  // (through kernels::gemm: the chosen provider, and bf16 operands under autocast)
  kernels::gemm(false, true, 1, S, hd, scale, q, hd, K, hd, 0.0f, scores, S);  // scale · q·Kᵀ (S)
  kernels::vec::softmax_row(scores, scores, S);                                // over the S keys
  kernels::gemm(false, false, 1, hd, S, 1.0f, scores, S, V, hd, 0.0f, out, hd);  // p·V (hd)
}

void attend_row_reference(const float* q, const float* K, const float* V, int64_t S, int64_t hd, float scale,
                          float* out) {
  std::vector<double> p(static_cast<size_t>(S));
  double m = -INFINITY, sum = 0;
  for (int64_t s = 0; s < S; ++s) {
    double dot = 0;
    for (int64_t j = 0; j < hd; ++j) dot += static_cast<double>(q[j]) * K[s * hd + j];
    p[s] = dot * scale;
    m = std::max(m, p[s]);
  }
  for (int64_t s = 0; s < S; ++s) sum += (p[s] = std::exp(p[s] - m));
  for (int64_t j = 0; j < hd; ++j) {
    double acc = 0;
    for (int64_t s = 0; s < S; ++s) acc += p[s] / sum * V[s * hd + j];
    out[j] = static_cast<float>(acc);
  }
}

void linear(const float* x, int64_t R, const Weight& w, float* y, Activation act, bool accumulate) {
  if (act != Activation::None && accumulate)
    throw std::invalid_argument("decode::linear: an activation and accumulate do not combine");
  const int64_t N = w.N, K = w.K;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kChunkWork / std::max<int64_t>(R * K * kBlock, 1));
  const float beta = accumulate ? 1.0f : 0.0f;
  parallel::parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    const int64_t n0 = b0 * kBlock, n1 = std::min(N, b1 * kBlock), n = n1 - n0;
    if (R <= kFewRows) {
      // y[:, j : j+width] = x · block, block (K, width): each block one contiguous read of the
      // weights. (OpenBLAS's GEMV over W as stored streams it at about 60% of this speed, and a
      // GEMM over a whole slice of W packs it first.)
      for (int64_t j = n0; j < n1; j += kBlock) {
        const int64_t width = std::min(kBlock, N - j);
        kernels::gemm(false, false, R, width, K, 1.0f, x, K, w.blocked.data() + j * K, width, beta, y + j, N);
      }
    } else {  // y[:, n0:n1] = x · W[n0:n1]ᵀ
      kernels::gemm(false, true, R, n, K, 1.0f, x, K, w.W + n0 * K, K, beta, y + n0, N);
    }
    // The epilogue on the slice just written, while it is in cache.
    float tmp[kBlock];
    for (int64_t r = 0; r < R; ++r) {
      float* yr = y + r * N + n0;
      if (w.b)
        for (int64_t j = 0; j < n; ++j) yr[j] += w.b[n0 + j];
      if (act == Activation::Gelu)  // a chunk spans one or more blocks: kBlock values at a time through `tmp`
        for (int64_t j = 0; j < n; j += kBlock) {
          const int64_t width = std::min(kBlock, n - j);
          kernels::vec::gelu_forward(yr + j, tmp, width);
          std::memcpy(yr + j, tmp, static_cast<size_t>(width) * sizeof(float));
        }
      if (act == Activation::ReluSquared)
        for (int64_t j = 0; j < n; ++j) yr[j] = yr[j] > 0 ? yr[j] * yr[j] : 0.0f;
    }
  });
}

}  // namespace decode

namespace {
const float* ptr(const Tensor& t) {  // null for an absent (undefined) bias or affine weight
  return t.defined() ? t.data<float>() : nullptr;
}
}  // namespace

bool Decoder::supports(const TransformerLM& model) {
  for (const auto& [name, p] : model.named_parameters())
    if (p.dtype() != DType::Float32 || !p.is_contiguous()) return false;
  return true;
}

Decoder::Decoder(const TransformerLM& model, int64_t batch) {
  if (!supports(model)) throw std::invalid_argument("Decoder: needs a model with contiguous float32 parameters");
  if (batch < 1) throw std::invalid_argument("Decoder: batch must be positive, got " + std::to_string(batch));
  const GPTConfig& c = model.config();
  B_ = batch, E_ = c.n_embd, H_ = c.n_head, hd_ = c.n_embd / c.n_head, V_ = c.vocab_size, block_ = c.block_size;
  for (const auto& [name, p] : model.named_parameters()) n_params_ += p.numel();
  tok_emb_ = ptr(model.tok_emb->weight), pos_emb_ = model.pos_emb ? ptr(model.pos_emb->weight) : nullptr;
  const auto norm_of = [](const nn::Module& m) -> Norm {
    if (const auto* ln = dynamic_cast<const nn::LayerNorm*>(&m)) return {false, ptr(ln->weight), ptr(ln->bias), static_cast<float>(ln->eps)};
    const auto& rms = dynamic_cast<const nn::RMSNorm&>(m);
    return {true, ptr(rms.weight), nullptr,
            static_cast<float>(rms.eps.value_or(std::numeric_limits<float>::epsilon()))};  // rms_norm's default
  };
  lnf_ = norm_of(*model.ln_f);
  qk_norm_ = c.arch.qk_norm, rope_ = c.arch.rope, softcap_ = static_cast<float>(c.arch.softcap);
  qk_eps_ = std::numeric_limits<float>::epsilon();  // MultiheadAttention's qk_norm_eps, unset
  act_ = c.arch.relu_squared ? decode::Activation::ReluSquared : decode::Activation::Gelu;
  if (rope_) kernels::rope_tables(hd_, model.blocks->operator[](0).attn->options.rope_base, block_, rope_cos_, rope_sin_);
  const float* head = model.lm_head ? ptr(model.lm_head->weight) : tok_emb_;  // logits = h · headᵀ
  head_ = std::make_unique<decode::Weight>(head, nullptr, V_, E_);
  const size_t cache = static_cast<size_t>(B_ * H_ * block_ * hd_);
  for (const auto& block : *model.blocks) {
    const Block& blk = *block;
    const auto i = static_cast<int64_t>(layers_.size());
    const nn::MultiheadAttention& a = *blk.attn;
    const MLP& m = *blk.mlp;
    const int64_t E = E_;
    layers_.push_back({norm_of(*blk.ln1), norm_of(*blk.ln2),
                       decode::Weight(ptr(a.in_proj_weight), ptr(a.in_proj_bias), 3 * E, E),
                       decode::Weight(ptr(a.out_proj->weight), ptr(a.out_proj->bias), E, E),
                       decode::Weight(ptr(m.fc->weight), ptr(m.fc->bias), 4 * E, E),
                       decode::Weight(ptr(m.proj->weight), ptr(m.proj->bias), E, 4 * E), std::vector<float>(cache),
                       std::vector<float>(cache), nullptr, nullptr, ptr(blk.x_lambda), ptr(blk.x0_lambda)});
    if (const int64_t k = c.value_table_of(i); k >= 0) {
      layers_.back().value_table = ptr((*model.value_embeds)[static_cast<size_t>(k)].weight);
      layers_.back().value_lambdas = ptr(model.value_lambdas) + 2 * c.value_lambda_row(i);
    }
  }
  value_tables_ = c.value_embeds;
  skips_ = c.unet_pairs();
  if (skips_ > 0) skip_weights_ = ptr(model.skip_weights);
  kept_.resize(static_cast<size_t>(skips_));
  last_.resize(static_cast<size_t>(B_ * E_));
  logits_.resize(static_cast<size_t>(B_ * V_));
  scores_.resize(static_cast<size_t>(B_ * H_ * block_));
  ensure_rows(B_);
}

double Decoder::weight_bytes_per_step() const {
  int64_t unread = pos_emb_ ? (block_ - 1) * E_ : 0;  // the position rows not used
  if (head_->W != tok_emb_) unread += (V_ - 1) * E_;   // untied: one row of tok_emb per token
  unread += value_tables_ * (V_ - 1) * E_;  // a value table: its two layers read one row per token
  return static_cast<double>(n_params_ - unread) * sizeof(float);
}

void Decoder::ensure_rows(int64_t R) {
  if (static_cast<int64_t>(mean_.size()) >= R) return;
  const auto n = [&](int64_t w) { return static_cast<size_t>(R * w); };
  x_.resize(n(E_)), h_.resize(n(E_)), qkv_.resize(n(3 * E_)), ctx_.resize(n(E_)), ff_.resize(n(4 * E_));
  for (auto& kept : kept_) kept.resize(n(E_));
  if (layers_.front().x_lambda) x0_.resize(n(E_));
  mean_.resize(n(1)), rstd_.resize(n(1));
}

void Decoder::norm(const Norm& n, const float* x, float* y, int64_t R) {
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / E_);  // rows worth a thread
  parallel::parallel_for(R, grain, [&](int64_t r0, int64_t r1) {
    if (n.rms)
      kernels::vec::rms_norm_forward(x + r0 * E_, n.w, y + r0 * E_, rstd_.data() + r0, r1 - r0, E_, n.eps);
    else
      kernels::vec::layer_norm_forward(x + r0 * E_, n.w, n.b, y + r0 * E_, mean_.data() + r0, rstd_.data() + r0, r1 - r0,
                                       E_, n.eps);
  });
}

// qkv_ (B, T, 3E): each new row's query and key heads normalised (qk_norm) and turned to their
// positions len_ + t (rope), in place, as MultiheadAttention's position_heads does.
void Decoder::position_heads(int64_t T) {
  if (!qk_norm_ && !rope_) return;
  const int64_t E = E_, hd = hd_, half = hd / 2;
  parallel::parallel_for(B_ * T, std::max<int64_t>(1, (int64_t(1) << 12) / E), [&](int64_t r0, int64_t r1) {
    std::vector<float> tmp(static_cast<size_t>(hd));
    float rstd;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t pos = len_ + r % T;
      for (int64_t part = 0; part < 2; ++part)  // q, then k
        for (int64_t h = 0; h < H_; ++h) {
          float* x = qkv_.data() + r * 3 * E + part * E + h * hd;
          if (qk_norm_) {
            kernels::vec::rms_norm_forward(x, nullptr, tmp.data(), &rstd, 1, hd, qk_eps_);
            std::memcpy(x, tmp.data(), static_cast<size_t>(hd) * sizeof(float));
          }
          if (rope_) kernels::rope_row(x, x, hd, rope_cos_.data() + pos * half, rope_sin_.data() + pos * half, false);
        }
    }
  });
}

// qkv_ (R, 3E): each row's values mixed with its token's row of the layer's value table, as
// MultiheadAttention's ValueMix: v ← λ_v·v + λ_e·table[id].
void Decoder::mix_values(const Layer& L, const int64_t* tokens, int64_t R) {
  const int64_t E = E_;
  const float lv = L.value_lambdas[0], le = L.value_lambdas[1];
  for (int64_t r = 0; r < R; ++r) {
    float* v = qkv_.data() + r * 3 * E + 2 * E;
    const float* e = L.value_table + tokens[r] * E;
    for (int64_t j = 0; j < E; ++j) v[j] = v[j] * lv + e[j] * le;
  }
}

// qkv_ (B, T, 3E) with [q | k | v] per row -> the new keys and values into the cache, and each
// new query's context over the cache into ctx_ (B, T, E), heads side by side.
void Decoder::attention(Layer& L, int64_t T) {
  const int64_t E = E_, H = H_, hd = hd_, cap = block_, pos0 = len_;
  for (int64_t b = 0; b < B_; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* row = qkv_.data() + (b * T + t) * 3 * E;
      for (int64_t h = 0; h < H; ++h) {
        const size_t at = static_cast<size_t>(((b * H + h) * cap + pos0 + t) * hd);
        std::memcpy(L.k.data() + at, row + E + h * hd, static_cast<size_t>(hd) * sizeof(float));
        std::memcpy(L.v.data() + at, row + 2 * E + h * hd, static_cast<size_t>(hd) * sizeof(float));
      }
    }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t work = T * (pos0 + T) * hd * 2;  // multiply-adds per (sequence, head)
  parallel::parallel_for(B_ * H, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(work, 1)),
                         [&](int64_t i0, int64_t i1) {
                           for (int64_t i = i0; i < i1; ++i) {
                             const int64_t b = i / H, h = i % H;
                             const float* K = L.k.data() + i * cap * hd;
                             const float* V = L.v.data() + i * cap * hd;
                             for (int64_t t = 0; t < T; ++t)  // query t sits at pos0 + t: sees keys 0 .. pos0 + t
                               decode::attend_row(qkv_.data() + (b * T + t) * 3 * E + h * hd, K, V, pos0 + t + 1, hd,
                                                  scale, scores_.data() + i * cap, ctx_.data() + (b * T + t) * E + h * hd);
                           }
                         });
}

const float* Decoder::forward(const int64_t* tokens, int64_t T) {
  if (T < 1) throw std::invalid_argument("Decoder::forward: needs at least one new position");
  if (len_ + T > block_)
    throw std::invalid_argument("Decoder::forward: " + std::to_string(len_ + T) + " positions exceed block_size " +
                                std::to_string(block_));
  const int64_t R = B_ * T, E = E_;
  ensure_rows(R);
  for (int64_t r = 0; r < R; ++r) {  // x = tok_emb[id] + pos_emb[pos]
    const int64_t id = tokens[r];
    if (id < 0 || id >= V_)
      throw std::invalid_argument("Decoder::forward: token id " + std::to_string(id) + " outside the vocabulary of " +
                                  std::to_string(V_));
    const float* te = tok_emb_ + id * E;
    float* xr = x_.data() + r * E;
    if (!pos_emb_) {  // rope: positions enter in the attention
      std::memcpy(xr, te, static_cast<size_t>(E) * sizeof(float));
      continue;
    }
    const float* pe = pos_emb_ + (len_ + r % T) * E;
    for (int64_t j = 0; j < E; ++j) xr[j] = te[j] + pe[j];
  }
  using decode::Activation;
  if (!x0_.empty()) std::memcpy(x0_.data(), x_.data(), static_cast<size_t>(R * E) * sizeof(float));
  const auto n_layers = static_cast<int64_t>(layers_.size());
  for (int64_t i = 0; i < n_layers; ++i) {
    Layer& L = layers_[static_cast<size_t>(i)];
    if (i >= n_layers - skips_) {  // x += w·(output of block n_layers − 1 − i), as TransformerLM::through_blocks
      const float w = skip_weights_[i - (n_layers - skips_)];
      const float* kept = kept_[static_cast<size_t>(n_layers - 1 - i)].data();
      for (int64_t j = 0; j < R * E; ++j) x_[j] += kept[j] * w;
    }
    if (L.x_lambda) {  // x = λ·x + μ·x0
      const float lx = *L.x_lambda, l0 = *L.x0_lambda;
      for (int64_t j = 0; j < R * E; ++j) x_[j] = x_[j] * lx + x0_[j] * l0;
    }
    norm(L.ln1, x_.data(), h_.data(), R);
    decode::linear(h_.data(), R, L.in_proj, qkv_.data(), Activation::None, false);  // (R, 3E)
    if (L.value_table) mix_values(L, tokens, R);
    position_heads(T);
    attention(L, T);                                                               // (R, E)
    decode::linear(ctx_.data(), R, L.out_proj, x_.data(), Activation::None, true);  // x += attn
    norm(L.ln2, x_.data(), h_.data(), R);
    decode::linear(h_.data(), R, L.fc, ff_.data(), act_, false);                    // act(fc)  (R, 4E)
    decode::linear(ff_.data(), R, L.proj, x_.data(), Activation::None, true);       // x += mlp
    if (i < skips_) std::memcpy(kept_[static_cast<size_t>(i)].data(), x_.data(), static_cast<size_t>(R * E) * sizeof(float));
  }
  len_ += T;
  for (int64_t b = 0; b < B_; ++b)  // only each row's last position is sampled from
    std::memcpy(h_.data() + b * E, x_.data() + (b * T + T - 1) * E, static_cast<size_t>(E) * sizeof(float));
  norm(lnf_, h_.data(), last_.data(), B_);
  decode::linear(last_.data(), B_, *head_, logits_.data(), Activation::None, false);  // (B, V)
  if (softcap_ > 0)  // softcap · tanh(logits / softcap), as the softcap op
    for (int64_t i = 0; i < B_ * V_; ++i) logits_[i] = softcap_ * std::tanh(logits_[i] * (1.0f / softcap_));
  return logits_.data();
}

}  // namespace ag::models
