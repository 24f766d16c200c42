#include "models/decode.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

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
  const int s = static_cast<int>(S), d = static_cast<int>(hd);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, s, d, scale, q, d, K, d, 0.0f, scores, s);  // scale · q·Kᵀ (S)
  kernels::vec::softmax_row(scores, scores, S);                                                     // over the S keys
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, d, s, 1.0f, scores, s, V, d, 0.0f, out, d);  // p·V (hd)
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

void linear(const float* x, int64_t R, const Weight& w, float* y, bool gelu, bool accumulate) {
  if (gelu && accumulate) throw std::invalid_argument("decode::linear: GELU and accumulate do not combine");
  const int64_t N = w.N, K = w.K;
  const int ik = static_cast<int>(K), in = static_cast<int>(N);
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
        const int width = static_cast<int>(std::min(kBlock, N - j));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(R), width, ik, 1.0f, x, ik,
                    w.blocked.data() + j * K, width, beta, y + j, in);
      }
    } else {  // y[:, n0:n1] = x · W[n0:n1]ᵀ
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(R), static_cast<int>(n), ik, 1.0f, x, ik,
                  w.W + n0 * K, ik, beta, y + n0, in);
    }
    // The epilogue on the slice just written, while it is in cache.
    float act[kBlock];
    for (int64_t r = 0; r < R; ++r) {
      float* yr = y + r * N + n0;
      if (w.b)
        for (int64_t j = 0; j < n; ++j) yr[j] += w.b[n0 + j];
      if (gelu)  // a chunk spans one or more blocks: kBlock values at a time through `act`
        for (int64_t j = 0; j < n; j += kBlock) {
          const int64_t width = std::min(kBlock, n - j);
          kernels::vec::gelu_forward(yr + j, act, width);
          std::memcpy(yr + j, act, static_cast<size_t>(width) * sizeof(float));
        }
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
  tok_emb_ = ptr(model.tok_emb->weight), pos_emb_ = ptr(model.pos_emb->weight);
  lnf_w_ = ptr(model.ln_f->weight), lnf_b_ = ptr(model.ln_f->bias), lnf_eps_ = static_cast<float>(model.ln_f->eps);
  head_ = std::make_unique<decode::Weight>(tok_emb_, nullptr, V_, E_);  // tied: logits = h · tok_embᵀ
  const size_t cache = static_cast<size_t>(B_ * H_ * block_ * hd_);
  for (const auto& block : *model.blocks) {
    const Block& blk = *block;
    const nn::MultiheadAttention& a = *blk.attn;
    const MLP& m = *blk.mlp;
    const int64_t E = E_;
    layers_.push_back({ptr(blk.ln1->weight), ptr(blk.ln1->bias), ptr(blk.ln2->weight), ptr(blk.ln2->bias),
                       static_cast<float>(blk.ln1->eps), static_cast<float>(blk.ln2->eps),
                       decode::Weight(ptr(a.in_proj_weight), ptr(a.in_proj_bias), 3 * E, E),
                       decode::Weight(ptr(a.out_proj->weight), ptr(a.out_proj->bias), E, E),
                       decode::Weight(ptr(m.fc->weight), ptr(m.fc->bias), 4 * E, E),
                       decode::Weight(ptr(m.proj->weight), ptr(m.proj->bias), E, 4 * E), std::vector<float>(cache),
                       std::vector<float>(cache)});
  }
  last_.resize(static_cast<size_t>(B_ * E_));
  logits_.resize(static_cast<size_t>(B_ * V_));
  scores_.resize(static_cast<size_t>(B_ * H_ * block_));
  ensure_rows(B_);
}

double Decoder::weight_bytes_per_step() const {
  return static_cast<double>(n_params_ - (block_ - 1) * E_) * sizeof(float);
}

void Decoder::ensure_rows(int64_t R) {
  if (static_cast<int64_t>(mean_.size()) >= R) return;
  const auto n = [&](int64_t w) { return static_cast<size_t>(R * w); };
  x_.resize(n(E_)), h_.resize(n(E_)), qkv_.resize(n(3 * E_)), ctx_.resize(n(E_)), ff_.resize(n(4 * E_));
  mean_.resize(n(1)), rstd_.resize(n(1));
}

void Decoder::layer_norm(const float* x, const float* w, const float* b, float eps, float* y, int64_t R) {
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / E_);  // rows worth a thread
  parallel::parallel_for(R, grain, [&](int64_t r0, int64_t r1) {
    kernels::vec::layer_norm_forward(x + r0 * E_, w, b, y + r0 * E_, mean_.data() + r0, rstd_.data() + r0, r1 - r0,
                                     E_, eps);
  });
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
    const float* pe = pos_emb_ + (len_ + r % T) * E;
    float* xr = x_.data() + r * E;
    for (int64_t j = 0; j < E; ++j) xr[j] = te[j] + pe[j];
  }
  for (Layer& L : layers_) {
    layer_norm(x_.data(), L.ln1_w, L.ln1_b, L.eps1, h_.data(), R);
    decode::linear(h_.data(), R, L.in_proj, qkv_.data(), false, false);  // (R, 3E)
    attention(L, T);                                                    // (R, E)
    decode::linear(ctx_.data(), R, L.out_proj, x_.data(), false, true);  // x += attn
    layer_norm(x_.data(), L.ln2_w, L.ln2_b, L.eps2, h_.data(), R);
    decode::linear(h_.data(), R, L.fc, ff_.data(), true, false);        // gelu(fc)  (R, 4E)
    decode::linear(ff_.data(), R, L.proj, x_.data(), false, true);      // x += mlp
  }
  len_ += T;
  for (int64_t b = 0; b < B_; ++b)  // only each row's last position is sampled from
    std::memcpy(h_.data() + b * E, x_.data() + (b * T + T - 1) * E, static_cast<size_t>(E) * sizeof(float));
  layer_norm(h_.data(), lnf_w_, lnf_b_, lnf_eps_, last_.data(), B_);
  decode::linear(last_.data(), B_, *head_, logits_.data(), false, false);  // (B, V), tied head
  return logits_.data();
}

}  // namespace ag::models
