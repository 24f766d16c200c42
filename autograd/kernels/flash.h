// Blockwise attention in O(L + S) memory per (batch·head) slice, FlashAttention-2 style:
//   O = softmax(scale · Q·Kᵀ + causal mask) · V,   lse_i = log Σ_j exp(scale · q_i·k_j)
// The forward walks one tile of query rows over the key tiles it can see, keeping a running
// row max m and row sum l (online softmax), so the (L, S) scores are never stored; it keeps
// only O and the row logsumexp. The backward recomputes each (query tile, key tile) block of P
// from lse. Tiles wholly above the causal diagonal are skipped; tiles crossing it are masked.
// Every product of two tiles is one BLAS GEMM. The materialised reference is
// matmul(attention_probs(q, k, ...), v) (autograd/ops/attention.cpp); tests/autograd/test_sdpa.cpp
// holds the two equal, and the float32 kernels equal to the float64 ones.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/fast_math.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/lanes.h"
#include "autograd/parallel.h"

namespace ag::kernels::flash {

// Query rows × key rows per block (measured: see bench/README.md's attention paragraph).
constexpr int64_t kTileQ = 128;
constexpr int64_t kTileK = 128;

struct Dims {
  int64_t BH = 0;  // (batch·head) slices
  int64_t L = 0, S = 0, D = 0, Dv = 0;
  bool causal = false;
  int64_t offset = 0;  // causal: query i sees key j iff j <= i + offset
  // Keys [0, visible(i)) are the ones query row i may see.
  int64_t visible(int64_t i) const { return causal ? std::clamp<int64_t>(i + offset + 1, 0, S) : S; }
};

// Where each (batch·head) slice of an operand starts (elements from its data pointer) and its
// row stride; rows are contiguous. Heads can so be read and written in place inside a packed
// (N, L, 3E) projection or an (N, L, E) context: no split or merge copies.
struct Slices {
  std::vector<int64_t> off;
  int64_t ld = 0;
};

// Head h of batch n (slice n·H + h) inside a contiguous (N, L, W) tensor: columns col0 + h·hd ..
// + hd, row stride W (self_attention_qkv's q, k, v in a packed (N, L, 3E), its context in (N, L, E)).
inline Slices head_slices(int64_t N, int64_t H, int64_t L, int64_t W, int64_t col0, int64_t hd) {
  Slices s;
  s.ld = W;
  s.off.resize(static_cast<size_t>(N * H));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) s.off[static_cast<size_t>(n * H + h)] = n * L * W + col0 + h * hd;
  return s;
}

namespace detail {
using lanes::lane_max;
using lanes::lane_sum;
}  // namespace detail

// Online-softmax update of a block of `rows` score rows (n columns, row stride ld), in place:
//   m' = max(m, max_j s_j);  s_j ← exp(s_j − m');  α = exp(m − m');  l ← α·l + Σ_j s_j;  m ← m'
// α is what the earlier blocks' sums (and outputs) shrink by. A row that has seen no
// visible key yet (m' = −inf) gets p = 0 and α = 1 instead of exp(−inf + inf) = NaN.
template <class T>
inline void online_softmax_block_ref(T* s, int64_t rows, int64_t n, int64_t ld, T* m, T* l, T* alpha) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* row = s + r * ld;
    const T bm = detail::lane_max(row, n);
    const T mx = bm > m[r] ? bm : m[r];
    if (mx == ninf) {
      std::fill(row, row + n, T(0));
      alpha[r] = 1;
      continue;
    }
    for (int64_t j = 0; j < n; ++j) row[j] = exp_fast_nonpositive(row[j] - mx);  // −inf (masked) gives exactly 0
    alpha[r] = m[r] == ninf ? T(0) : exp_fast_nonpositive(m[r] - mx);
    l[r] = alpha[r] * l[r] + detail::lane_sum(row, n);
    m[r] = mx;
  }
}

// Softmax backward of a block, in place: s holds scores and becomes P = exp(s − lse) (0 on a
// row with lse = −inf: no key visible), dp holds dP = dO·Vᵀ and becomes
//   dS = P ⊙ (dP − D),  D_i = Σ_j P_ij dP_ij = dO_i · O_i   (given per row in `drow`).
template <class T>
inline void softmax_grad_block_ref(T* s, T* dp, int64_t rows, int64_t n, int64_t ld, const T* lse, const T* drow) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* p = s + r * ld;
    T* d = dp + r * ld;
    if (lse[r] == ninf) {
      std::fill(p, p + n, T(0));
      std::fill(d, d + n, T(0));
      continue;
    }
    const T lr = lse[r], dr = drow[r];
    for (int64_t j = 0; j < n; ++j) {
      p[j] = exp_fast_nonpositive(p[j] - lr);
      d[j] = p[j] * (d[j] - dr);
    }
  }
}

// softmax_grad_block under bf16 autocast, where only the rounded P and dS are read after it (by
// the GEMMs): each P_ij and dS_ij rounded as it is computed, into p and ds (rows, n) tight, as
// bf16 bits or float32 values (Out). The same values as softmax_grad_block then a rounding of
// each (tests/autograd/test_sdpa.cpp holds them bit for bit), without writing P and dS back over s and
// dp and reading them again to round them.
template <class Out>
inline void softmax_grad_block_rounded_ref(const float* s, const float* dp, int64_t rows, int64_t n, int64_t ld,
                                           const float* lse, const float* drow, Out* p, Out* ds) {
  auto round = [](float v) {
    if constexpr (std::is_same_v<Out, uint16_t>)
      return bf16_bits(v);
    else
      return round_to_bf16(v);
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* sr = s + r * ld;
    const float* dr_in = dp + r * ld;
    Out *pr = p + r * n, *dsr = ds + r * n;
    if (lse[r] == -std::numeric_limits<float>::infinity()) {  // no key visible: P = dS = 0
      std::fill(pr, pr + n, round(0.0f));
      std::fill(dsr, dsr + n, round(0.0f));
      continue;
    }
    const float lr = lse[r], dr = drow[r];
    for (int64_t j = 0; j < n; ++j) {
      const float pj = exp_fast_nonpositive(sr[j] - lr);
      pr[j] = round(pj);
      dsr[j] = round(pj * (dr_in[j] - dr));
    }
  }
}
void softmax_grad_block_rounded(const float* s, const float* dp, int64_t rows, int64_t n, int64_t ld, const float* lse,
                                const float* drow, Bf16Matrix& p, Bf16Matrix& ds, bool native);

// The block kernels on doubles are the reference code itself; float32 goes to the run-time
// dispatched clones of the same code (flash_vec.cpp), with the vectorised exp_f32.
inline void online_softmax_block(double* s, int64_t rows, int64_t n, int64_t ld, double* m, double* l, double* a) {
  online_softmax_block_ref(s, rows, n, ld, m, l, a);
}
inline void softmax_grad_block(double* s, double* dp, int64_t rows, int64_t n, int64_t ld, const double* lse,
                               const double* drow) {
  softmax_grad_block_ref(s, dp, rows, n, ld, lse, drow);
}
void online_softmax_block(float* s, int64_t rows, int64_t n, int64_t ld, float* m, float* l, float* alpha);
void softmax_grad_block(float* s, float* dp, int64_t rows, int64_t n, int64_t ld, const float* lse, const float* drow);

// Hides key j from query i where j > i + offset, within the block at (i0, j0).
template <class T>
inline void mask_block(T* s, int64_t rows, int64_t n, int64_t ld, int64_t i0, int64_t j0, int64_t offset) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = std::max<int64_t>(0, i0 + r + offset + 1 - j0); j < n; ++j)
      s[r * ld + j] = -std::numeric_limits<T>::infinity();
}

// One slice's operand rounded to bf16 as a tight (rows, cols) block, wherever it is kept: in a
// Bf16Matrix of the slice's own, or inside one that holds every head (RoundedHeads).
struct RoundedBlock {
  const void* base = nullptr;  // element (0, 0): bf16 bits (native) or float32 values
  int64_t ld = 0;
  bool native = false;
  static RoundedBlock of(const Bf16Matrix& m, int64_t row0 = 0) { return {m.at(row0, 0), m.ld(), m.native()}; }
  const void* at(int64_t r, int64_t c) const {
    return static_cast<const char*>(base) + (r * ld + c) * static_cast<int64_t>(native ? sizeof(uint16_t) : sizeof(float));
  }
};

// Under bf16 autocast, the GEMMs of one slice read its q, k, v and dO rounded once (not once per
// tile GEMM: each tile of k is read by every query tile), and each block's P and dS rounded once
// (dS feeds two GEMMs). The GEMMs see the same operands, at the same row strides, as when each
// rounds its own tiles: the same products. q, k, v come from the forward's RoundedHeads when it
// kept them, else they are rounded into own_q, own_k, own_v.
struct RoundedSlice {
  RoundedBlock q, k, v, dout;
  bool qkv_given = false;  // q, k, v already point into rounded storage
  Bf16Matrix own_q, own_k, own_v, own_dout, p, ds;
  bool native = false;
};

// Self-attention's q, k and v rounded once under bf16 autocast, by the forward (each slice's by
// the thread that then reads them) and kept for the backward: each head's q, k and v as a tight
// (L, hd) block, so that every tile GEMM of both reads its rounded operand from here. Part 0, 1,
// 2 (q, k, v) of slice b is block part·BH + b, rows (part·BH + b)·L onwards.
struct RoundedHeads {
  Bf16Matrix m;  // (3·BH·L, hd)
  int64_t BH = 0, L = 0;
  // Storage for d's slices (self-attention: S == L and D == Dv), contents undefined.
  void reshape(const Dims& d, bool native) {
    BH = d.BH, L = d.L;
    m.reshape(3 * d.BH * d.L, d.D, native);
  }
  // Slice b's q, k, v (each (L, hd) at its row stride) rounded into their blocks.
  void round_slice(int64_t b, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v, int64_t ldv) {
    m.round_block_into_rows(q, ldq, b * L, (b + 1) * L);
    m.round_block_into_rows(k, ldk, (BH + b) * L, (BH + b + 1) * L);
    m.round_block_into_rows(v, ldv, (2 * BH + b) * L, (2 * BH + b + 1) * L);
  }
  RoundedBlock slice(int part, int64_t b) const { return RoundedBlock::of(m, (part * BH + b) * L); }
};

// s (ni, nj) = scale · q_i (ni, D) @ k_j (nj, D)ᵀ, masked where the block crosses the diagonal.
// With r (bf16 autocast), q and k are read from r's rounded copies of the slice.
template <class T>
inline void scores_block(const Dims& d, T scale, const T* q, int64_t ldq, const T* k, int64_t ldk, int64_t i0,
                         int64_t ni, int64_t j0, int64_t nj, T* s, int64_t lds, const RoundedSlice* r = nullptr) {
  if (d.D > 0 && r) {
    if constexpr (std::is_same_v<T, float>)
      gemm_rounded_blocks(false, true, ni, nj, d.D, scale, r->q.at(i0, 0), r->q.ld, r->k.at(j0, 0), r->k.ld, r->native,
                          0.0f, s, lds);
  } else if (d.D > 0) {
    gemm(false, true, ni, nj, d.D, scale, q, ldq, k, ldk, T(0), s, lds);
  } else {
    for (int64_t r0 = 0; r0 < ni; ++r0) std::fill(s + r0 * lds, s + r0 * lds + nj, T(0));
  }
  if (d.causal && j0 + nj - 1 > i0 + d.offset) mask_block(s, ni, nj, lds, i0, j0, d.offset);
}

// Forward of query rows [i0, i0 + ni) of one slice: o rows (ni, Dv) and lse (ni). With r (bf16
// autocast, float32 only), the GEMMs read q, k, v from r and each block's P rounded into r->p.
template <class T>
void forward_block(const Dims& d, T scale, const T* q, int64_t ldq, const T* k, int64_t ldk, const T* v, int64_t ldv,
                   T* o, int64_t ldo, T* lse, int64_t i0, int64_t ni, T* s, T* m, T* l, T* alpha,
                   RoundedSlice* r = nullptr) {
  for (int64_t row = 0; row < ni; ++row) {
    std::fill(o + (i0 + row) * ldo, o + (i0 + row) * ldo + d.Dv, T(0));
    m[row] = -std::numeric_limits<T>::infinity();
    l[row] = 0;
  }
  const int64_t kend = d.visible(i0 + ni - 1);  // the last row sees the most keys
  for (int64_t j0 = 0; j0 < kend; j0 += kTileK) {
    const int64_t nj = std::min(kTileK, kend - j0);
    scores_block(d, scale, q + i0 * ldq, ldq, k + j0 * ldk, ldk, i0, ni, j0, nj, s, kTileK, r);
    online_softmax_block(s, ni, nj, kTileK, m, l, alpha);
    for (int64_t row = 0; row < ni; ++row)
      if (alpha[row] != T(1))
        for (int64_t c = 0; c < d.Dv; ++c) o[(i0 + row) * ldo + c] *= alpha[row];
    // o_i (ni, Dv) += p (ni, nj) @ v_j (nj, Dv)
    if constexpr (std::is_same_v<T, float>) {
      if (r && d.Dv > 0) {  // p rounded as gemm() rounds its A: a tight (ni, nj) block
        r->p.round(s, ni, nj, kTileK, r->native);
        gemm_rounded_blocks(false, false, ni, d.Dv, nj, 1.0f, r->p.data(), r->p.ld(), r->v.at(j0, 0), r->v.ld,
                            r->native, 1.0f, o + i0 * ldo, ldo);
        continue;
      }
    }
    if (d.Dv > 0) gemm(false, false, ni, d.Dv, nj, T(1), s, kTileK, v + j0 * ldv, ldv, T(1), o + i0 * ldo, ldo);
  }
  for (int64_t row = 0; row < ni; ++row) {
    const T inv = l[row] > 0 ? T(1) / l[row] : T(0);  // no visible key: o = 0, as attention_probs gives
    for (int64_t c = 0; c < d.Dv; ++c) o[(i0 + row) * ldo + c] *= inv;
    lse[i0 + row] = l[row] > 0 ? m[row] + std::log(l[row]) : -std::numeric_limits<T>::infinity();
  }
}

// O (BH slices of (L, Dv)) and lse (BH, L), parallel over (slice, query tile) pairs. With heads
// (bf16 autocast, float32 self-attention, heads->reshape(d) done), over slices: each first
// rounds its q, k, v into heads, which its GEMMs then read and the backward keeps.
template <class T>
void forward(const Dims& d, T scale, const T* q, const Slices& sq, const T* k, const Slices& sk, const T* v,
             const Slices& sv, T* o, const Slices& so, T* lse, RoundedHeads* heads = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (heads) {
      const int64_t work = std::max<int64_t>(d.L, 1) * std::max<int64_t>(d.S, 1) * (d.D + d.Dv);
      const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(work, 1));
      parallel::parallel_for_claimed(d.BH, grain, [&](auto next) {
        std::vector<float> scratch(static_cast<size_t>(kTileQ * kTileK + 3 * kTileQ));
        float* s = scratch.data();
        float *m = s + kTileQ * kTileK, *l = m + kTileQ, *alpha = l + kTileQ;
        RoundedSlice r;
        r.native = heads->m.native();
        for (int64_t b = next(); b >= 0; b = next()) {
          heads->round_slice(b, q + sq.off[b], sq.ld, k + sk.off[b], sk.ld, v + sv.off[b], sv.ld);
          r.q = heads->slice(0, b), r.k = heads->slice(1, b), r.v = heads->slice(2, b);
          for (int64_t i0 = 0; i0 < d.L; i0 += kTileQ)
            forward_block(d, scale, q + sq.off[b], sq.ld, k + sk.off[b], sk.ld, v + sv.off[b], sv.ld, o + so.off[b],
                          so.ld, lse + b * d.L, i0, std::min(kTileQ, d.L - i0), s, m, l, alpha, &r);
        }
      });
      return;
    }
  }
  const int64_t tiles = (d.L + kTileQ - 1) / kTileQ;
  // Work items per thread: enough multiply-adds that a split pays for itself.
  const int64_t work = std::min(kTileQ, d.L) * std::max<int64_t>(d.S, 1) * (d.D + d.Dv);
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(work, 1));
  // Each pair's output rows are its own: claimed one at a time (parallel.h), so that a slower
  // thread takes fewer pairs rather than the other waiting for it.
  parallel::parallel_for_claimed(d.BH * tiles, grain, [&](auto next) {
    std::vector<T> scratch(static_cast<size_t>(kTileQ * kTileK + 3 * kTileQ));
    T* s = scratch.data();
    T *m = s + kTileQ * kTileK, *l = m + kTileQ, *alpha = l + kTileQ;
    for (int64_t w = next(); w >= 0; w = next()) {
      const int64_t b = w / tiles, i0 = (w % tiles) * kTileQ;
      forward_block(d, scale, q + sq.off[b], sq.ld, k + sk.off[b], sk.ld, v + sv.off[b], sv.ld, o + so.off[b], so.ld,
                    lse + b * d.L, i0, std::min(kTileQ, d.L - i0), s, m, l, alpha);
    }
  });
}

// Zeroes `rows` rows of `cols` at stride ld (a gradient slice before it is accumulated into).
template <class T>
inline void zero_rows(T* p, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::fill(p + r * ld, p + r * ld + cols, T(0));
}

// Backward of one slice (FlashAttention-2): for each key tile j, over the query tiles that see
// it, recompute P from lse and accumulate
//   dV_j += Pᵀ·dO_i,  dP = dO_i·V_jᵀ,  dS = P ⊙ (dP − D_i),  dQ_i += scale·dS·K_j,  dK_j += scale·dSᵀ·Q_i
// dq, dk, dv may be null (not wanted). drow is scratch of L; s, dp of kTileQ·kTileK.
// With r (bf16 autocast, float32 only), every GEMM reads rounded operands from r.
template <class T>
void backward_slice(const Dims& d, T scale, const T* q, int64_t ldq, const T* k, int64_t ldk, const T* v, int64_t ldv,
                    const T* o, int64_t ldo, const T* dout, int64_t lddo, const T* lse, T* dq, int64_t lddq, T* dk,
                    int64_t lddk, T* dv, int64_t lddv, T* drow, T* s, T* dp, RoundedSlice* r = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (r) {
      if (!r->qkv_given) {
        r->own_q.round(q, d.L, d.D, ldq, r->native);
        r->own_k.round(k, d.S, d.D, ldk, r->native);
        r->own_v.round(v, d.S, d.Dv, ldv, r->native);
        r->q = RoundedBlock::of(r->own_q), r->k = RoundedBlock::of(r->own_k), r->v = RoundedBlock::of(r->own_v);
      }
      r->own_dout.round(dout, d.L, d.Dv, lddo, r->native);
      r->dout = RoundedBlock::of(r->own_dout);
    }
  }
  // D_i = Σ_j P_ij dP_ij = Σ_c dO_ic O_ic: the row term of softmax's backward, from O alone
  for (int64_t i = 0; i < d.L; ++i) {
    T acc = 0;
    for (int64_t c = 0; c < d.Dv; ++c) acc += dout[i * lddo + c] * o[i * ldo + c];
    drow[i] = acc;
  }
  if (dq) zero_rows(dq, d.L, d.D, lddq);
  if (dk) zero_rows(dk, d.S, d.D, lddk);
  if (dv) zero_rows(dv, d.S, d.Dv, lddv);
  for (int64_t j0 = 0; j0 < d.S; j0 += kTileK) {
    const int64_t nj = std::min(kTileK, d.S - j0);
    // The first query that sees key j0 (causal: i + offset >= j0)
    const int64_t ibeg = d.causal ? std::max<int64_t>(0, j0 - d.offset) : 0;
    for (int64_t i0 = ibeg; i0 < d.L; i0 += kTileQ) {
      const int64_t ni = std::min(kTileQ, d.L - i0);
      scores_block(d, scale, q + i0 * ldq, ldq, k + j0 * ldk, ldk, i0, ni, j0, nj, s, kTileK, r);
      // dp (ni, nj) = dO_i (ni, Dv) @ v_j (nj, Dv)ᵀ
      if constexpr (std::is_same_v<T, float>) {
        if (r && d.Dv > 0 && d.D > 0) {
          gemm_rounded_blocks(false, true, ni, nj, d.Dv, 1.0f, r->dout.at(i0, 0), r->dout.ld, r->v.at(j0, 0), r->v.ld,
                              r->native, 0.0f, dp, kTileK);
          softmax_grad_block_rounded(s, dp, ni, nj, kTileK, lse + i0, drow + i0, r->p, r->ds, r->native);  // P, dS
          // dv_j += Pᵀ·dO_i,  dq_i += scale · dS·k_j,  dk_j += scale · dSᵀ·q_i  (as below)
          if (dv)
            gemm_rounded_blocks(true, false, nj, d.Dv, ni, 1.0f, r->p.data(), r->p.ld(), r->dout.at(i0, 0), r->dout.ld,
                                r->native, 1.0f, dv + j0 * lddv, lddv);
          if (dq)
            gemm_rounded_blocks(false, false, ni, d.D, nj, scale, r->ds.data(), r->ds.ld(), r->k.at(j0, 0), r->k.ld,
                                r->native, 1.0f, dq + i0 * lddq, lddq);
          if (dk)
            gemm_rounded_blocks(true, false, nj, d.D, ni, scale, r->ds.data(), r->ds.ld(), r->q.at(i0, 0), r->q.ld,
                                r->native, 1.0f, dk + j0 * lddk, lddk);
          continue;
        }
      }
      if (d.Dv > 0)
        gemm(false, true, ni, nj, d.Dv, T(1), dout + i0 * lddo, lddo, v + j0 * ldv, ldv, T(0), dp, kTileK);
      else
        zero_rows(dp, ni, nj, kTileK);
      softmax_grad_block(s, dp, ni, nj, kTileK, lse + i0, drow + i0);  // s = P, dp = dS
      // dv_j (nj, Dv) += Pᵀ (nj, ni) @ dO_i (ni, Dv)
      if (dv && d.Dv > 0)
        gemm(true, false, nj, d.Dv, ni, T(1), s, kTileK, dout + i0 * lddo, lddo, T(1), dv + j0 * lddv, lddv);
      if (d.D == 0) continue;
      // dq_i (ni, D) += scale · dS (ni, nj) @ k_j (nj, D)
      if (dq) gemm(false, false, ni, d.D, nj, scale, dp, kTileK, k + j0 * ldk, ldk, T(1), dq + i0 * lddq, lddq);
      // dk_j (nj, D) += scale · dSᵀ (nj, ni) @ q_i (ni, D)
      if (dk) gemm(true, false, nj, d.D, ni, scale, dp, kTileK, q + i0 * ldq, ldq, T(1), dk + j0 * lddk, lddk);
    }
  }
}

// dq, dk, dv (each slices like q, k, v, or null) from dO, parallel over slices (each owns its
// rows of dq, dk, dv: no two threads write one row), claimed one at a time (parallel.h): with
// fixed halves, one thread had finished 1.9 ms (10%) before the other in one of the large
// model's attention backward ops, 1.5-3.3 ms per step (bench/README). Under bf16 autocast, q, k
// and v are read from heads (the forward's, when it kept them for this path) or rounded here.
template <class T>
void backward(const Dims& d, T scale, const T* q, const Slices& sq, const T* k, const Slices& sk, const T* v,
              const Slices& sv, const T* o, const Slices& so, const T* dout, const Slices& sdo, const T* lse, T* dq,
              const Slices& sdq, T* dk, const Slices& sdk, T* dv, const Slices& sdv,
              const RoundedHeads* heads = nullptr) {
  const int64_t work = std::max<int64_t>(d.L, 1) * std::max<int64_t>(d.S, 1) * (d.D + d.Dv);
  const int64_t grain = std::max<int64_t>(1, kParallelGemmWork / std::max<int64_t>(work, 1));
  // Under bf16 autocast (float32 with both head widths nonzero): each chunk's rounded copies.
  const bool rounded = std::is_same_v<T, float> && is_autocast_enabled() && d.D > 0 && d.Dv > 0;
  parallel::parallel_for_claimed(d.BH, grain, [&](auto next) {
    std::vector<T> scratch(static_cast<size_t>(2 * kTileQ * kTileK + d.L));
    T *s = scratch.data(), *dp = s + kTileQ * kTileK, *drow = dp + kTileQ * kTileK;
    RoundedSlice r;
    r.native = bf16_path_is_native();
    r.qkv_given = heads && heads->m.native() == r.native;
    for (int64_t b = next(); b >= 0; b = next()) {
      if (r.qkv_given) r.q = heads->slice(0, b), r.k = heads->slice(1, b), r.v = heads->slice(2, b);
      backward_slice(d, scale, q + sq.off[b], sq.ld, k + sk.off[b], sk.ld, v + sv.off[b], sv.ld, o + so.off[b], so.ld,
                     dout + sdo.off[b], sdo.ld, lse + b * d.L, dq ? dq + sdq.off[b] : nullptr, sdq.ld,
                     dk ? dk + sdk.off[b] : nullptr, sdk.ld, dv ? dv + sdv.off[b] : nullptr, sdv.ld, drow, s, dp,
                     rounded ? &r : nullptr);
    }
  });
}

}  // namespace ag::kernels::flash
