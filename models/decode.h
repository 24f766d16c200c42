// Decoder: the GPT's KV-cache inference path for sampling, outside autograd.
//
// Decoding one token per sequence reads every weight once per step, so a step costs the time
// to stream ~4·n_params bytes from memory: the decoder is built so that nothing else shows.
// It makes no graph nodes and no tensors per token; its buffers are allocated once and reused;
// the weights are copied once per decoder into the order a step reads them (a second copy of
// the matrices while it lives), and every projection is a BLAS call per block of output
// features on each thread's share of the blocks (a prefill of many rows: one GEMM per thread on
// the weights as stored), with bias, GELU and residual applied to the share while it is hot;
// attention over the cache is a direct kernel (q·Kᵀ over contiguous cached keys, softmax, ·V).
// All rows of a batch advance together, at the same position: the weights are read once per
// step for the whole batch.
//
// The same math as TransformerLM::forward, in either architecture (tests/models/test_decode.cpp holds
// them equal):
//   x = tok_emb[id] + pos_emb[pos]  (modern: tok_emb[id])                (R, E), R = B·T rows
//   per block: x += w·kept  (U-net skips: the output kept from the first half's mirror block)
//              x = λ·x + μ·x0  (the x0 residual: x0 the embedding)
//              x += out_proj(attend(split(in_proj(ln1(x))), cache))      causal over the cache;
//                   modern: q, k = rope(rms_norm(q)), rope(rms_norm(k)) per head at their positions;
//                   value embeddings: v = λ_v·v + λ_e·table[id] before v enters the cache
//              x += proj(act(fc(ln2(x))))                                act: gelu, or relu²
//              (U-net skips: x kept, in the first half)
//   logits = ln_f(x_last) · headᵀ                                        (B, V), last new position;
//            head: tok_emb (tied) or lm_head; modern: soft-capped
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace ag::models {

class TransformerLM;

namespace decode {

// One query row over S cached positions (rows of K and V, each hd wide):
//   p = softmax(scale · K·q) (S),  out = Vᵀ·p (hd);  `scores` is scratch of S floats.
void attend_row(const float* q, const float* K, const float* V, int64_t S, int64_t hd, float scale, float* scores,
                float* out);
// The same, in double with plain loops: the reference attend_row is tested against.
void attend_row_reference(const float* q, const float* K, const float* V, int64_t S, int64_t hd, float scale,
                          float* out);

// Output features are split across threads in blocks of this many: chunk boundaries depend only
// on the sizes and the thread count, so results are reproducible for a thread count. 64 measured
// best in alternating `bench sample` runs: against 32, large batch 1 ran 1657-1807 tokens/s vs
// 1071-1628, batch 8 within 10% either way, default 2-13% faster; 128 was 30-40% slower at batch 8.
constexpr int64_t kBlock = 64;

// A projection's weight W (N, K) and bias b (N, or null), and a copy of W laid out for decoding:
// blocks of kBlock output features, block i the (K, width) row-major matrix of features
// [i·kBlock, i·kBlock + width), so that a few rows read the weight as one contiguous stream.
struct Weight {
  Weight(const float* W, const float* b, int64_t N, int64_t K);
  const float *W, *b;
  int64_t N, K;
  std::vector<float> blocked;  // N·K floats
};

// The activation applied after a projection.
enum class Activation { None, Gelu, ReluSquared };

// y(R, N) = x(R, K)·Wᵀ + b, then the activation, then added to y's old contents if `accumulate`
// (the residual; not with an activation). The output features are split across attograd's
// threads in kBlock blocks; each thread makes ordinary single-threaded BLAS calls. y must not
// alias x.
void linear(const float* x, int64_t R, const Weight& w, float* y, Activation act, bool accumulate);

}  // namespace decode

class Decoder {
 public:
  // For a float32 model (supports() says whether it is one); `batch` sequences decoded in
  // lockstep. Keeps pointers to the model's weights: the model must outlive the decoder and
  // its parameters must not be reassigned meanwhile.
  Decoder(const TransformerLM& model, int64_t batch);
  static bool supports(const TransformerLM& model);

  // Feeds tokens (batch, T) row-major at positions len() .. len()+T-1 of every sequence and
  // appends their keys and values to the caches. Returns the logits (batch, V) of each row's
  // last new position, valid until the next call. Throws std::invalid_argument for an id
  // outside the vocabulary or when len() + T exceeds block_size.
  const float* forward(const int64_t* tokens, int64_t T);
  void reset() { len_ = 0; }  // forget the cached positions
  int64_t len() const { return len_; }
  int64_t batch() const { return B_; }

  // Bytes of weights a one-token step reads: every parameter but the pos_emb rows not used (and
  // tok_emb's, when the head is untied: a step reads one row of it).
  double weight_bytes_per_step() const;

 private:
  // A LayerNorm (w, b or null) or an RMSNorm (w or null, b null).
  struct Norm {
    bool rms;
    const float *w, *b;
    float eps;
  };
  struct Layer {
    Norm ln1, ln2;
    decode::Weight in_proj, out_proj, fc, proj;
    std::vector<float> k, v;  // (B, H, block, hd): the cache, one contiguous run of keys per head
    const float* value_table = nullptr;  // (V, E), the layer's value embedding; null for none
    const float* value_lambdas = nullptr;  // (2): λ_v, λ_e, read at each step
    const float *x_lambda = nullptr, *x0_lambda = nullptr;  // the x0 residual's λ, μ; null without
  };
  void ensure_rows(int64_t R);                         // grows the per-row buffers to R rows
  void attention(Layer& L, int64_t T);                 // qkv_ -> cache, ctx_
  void position_heads(int64_t T);                      // qkv_'s q and k: qk_norm, rope at len_ + t
  void mix_values(const Layer& L, const int64_t* tokens, int64_t R);  // qkv_'s v: λ_v·v + λ_e·table[id]
  void norm(const Norm& n, const float* x, float* y, int64_t R);

  int64_t B_, E_, H_, hd_, V_, block_, len_ = 0, n_params_ = 0;
  const float *tok_emb_, *pos_emb_;  // pos_emb_: null with rope
  Norm lnf_;
  bool qk_norm_, rope_;
  float qk_eps_, softcap_;
  decode::Activation act_;
  std::vector<float> rope_cos_, rope_sin_;  // (block, hd/2), as the rope op's
  std::unique_ptr<decode::Weight> head_;  // tok_emb (tied) or lm_head
  std::vector<Layer> layers_;
  const float* skip_weights_ = nullptr;  // (n_layer/2) of the U-net skips; null without
  int64_t skips_ = 0;                    // n_layer/2 with U-net skips, else 0
  int64_t value_tables_ = 0;             // value embedding tables
  // Per-row buffers, sized for the most rows fed so far (R = B·T).
  std::vector<float> x_, h_, qkv_, ctx_, ff_, mean_, rstd_;
  std::vector<std::vector<float>> kept_;  // (R, E) per U-net skip: the first half's outputs
  std::vector<float> x0_;                 // (R, E): the embedding, with the x0 residual
  std::vector<float> last_, logits_, scores_;  // (B, E), (B, V), (B·H, block)
};

}  // namespace ag::models
