// attention_probs: P = softmax(scale · Q·Kᵀ + mask), fused into one node.
// Forward and backward each run one GEMM per batch entry plus a row loop; the (B, L, S)
// score matrix is never stored, only the probabilities P. A float mask that requires grad (a
// learned bias) gets dScores as its gradient. The definition with ops (softmax of the masked,
// scaled scores: attention_probs_unfused, autograd/ops/attention.h) gives the higher derivatives
// (fused_backward.h).
#include <cmath>
#include <limits>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/softmax.h"
#include "autograd/ops.h"
#include "autograd/ops/attention.h"
#include "autograd/ops/fused_backward.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"

namespace ag {

namespace {

struct AttentionDims {
  int64_t B, L, S, D;
  int64_t batch_grain;  // batch entries per thread
};

// The backward kernel (the formulas are at attention_probs' record() below) on P (B, L, S), the
// dense Q (B, L, D) and K (B, S, D) and g = dP; Q is needed only for dK and K only for dQ. Only
// the wanted gradients are computed; the others are undefined.
Grads attention_probs_backward_kernel(const Tensor& P, const Tensor& Q, const Tensor& K, const Tensor& g, double scale,
                                      const AttentionDims& dims, bool gq, bool gk, bool gm, bool mask_batched) {
  const int64_t B = dims.B, L = dims.L, S = dims.S, D = dims.D;
  const Tensor G = kernels::dense(g);
  Tensor dq = gq ? Tensor::empty({B, L, D}, P.dtype()) : Tensor();
  Tensor dk = gk ? Tensor::empty({B, S, D}, P.dtype()) : Tensor();
  Tensor ds_all = gm ? Tensor::empty({B, L, S}, P.dtype()) : Tensor();  // (B, L, S), only for the mask
  AG_DISPATCH_FLOAT(P.dtype(), "attention_probs_backward", [&] {
    const scalar_t sc = static_cast<scalar_t>(scale);
    parallel::parallel_for(B, dims.batch_grain, [&](int64_t b0, int64_t b1) {
      std::vector<scalar_t> ds_local(gm ? 0 : static_cast<size_t>(L * S));  // (L, S) for one batch entry
      for (int64_t b = b0; b < b1; ++b) {
        scalar_t* ds = gm ? ds_all.data<scalar_t>() + b * L * S : ds_local.data();
        const scalar_t* Pb = P.data<scalar_t>() + b * L * S;
        const scalar_t* Gb = G.data<scalar_t>() + b * L * S;
        for (int64_t i = 0; i < L; ++i) kernels::softmax_row_backward(Pb + i * S, Gb + i * S, ds + i * S, S);
        if (gq) {
          scalar_t* dqb = dq.data<scalar_t>() + b * L * D;
          if (S > 0 && D > 0)
            kernels::gemm(false, false, L, D, S, sc, ds, S, K.data<scalar_t>() + b * S * D, D, scalar_t(0),
                          dqb, D);
          else
            std::fill(dqb, dqb + L * D, scalar_t(0));
        }
        if (gk) {
          scalar_t* dkb = dk.data<scalar_t>() + b * S * D;
          if (L > 0 && D > 0)
            kernels::gemm(true, false, S, D, L, sc, ds, S, Q.data<scalar_t>() + b * L * D, D, scalar_t(0),
                          dkb, D);
          else
            std::fill(dkb, dkb + S * D, scalar_t(0));
        }
      }
    });
  });
  Tensor dmask;
  if (gm) dmask = mask_batched ? ds_all : sum(ds_all, {0});  // a 2-d mask was broadcast over B
  return Grads{dq, dk, dmask};
}

}  // namespace

// attention_probs' definition (autograd/ops/attention.h): its higher derivatives come from it.
Tensor attention_probs_unfused(const Tensor& q, const Tensor& k, const Tensor& mask, double scale, bool causal,
                               int64_t causal_offset) {
  Tensor scores = mul(matmul(q, transpose(k, 1, 2)), scale);  // (B, L, S)
  if (mask.defined()) scores = add(scores, mask);
  if (causal) {  // key j hidden from query i when j > i + causal_offset
    const int64_t L = q.size(1), S = k.size(1);
    Tensor hidden = Tensor::zeros({L, S}, DType::Bool);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = std::max<int64_t>(0, i + causal_offset + 1); j < S; ++j) hidden.data<bool>()[i * S + j] = true;
    scores = masked_fill(scores, hidden, -std::numeric_limits<double>::infinity());
  }
  return softmax(scores, -1);
}

Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, double scale, bool causal,
                       int64_t causal_offset) {
  AG_PROFILE_OP("attention_probs");
  kernels::check_same_dtype(q, k, "attention_probs");
  if (q.dim() != 3 || k.dim() != 3 || q.size(0) != k.size(0) || q.size(2) != k.size(2))
    throw std::invalid_argument("attention_probs: expected q (B, L, D) and k (B, S, D), got " + describe(q) + " and " +
                                describe(k));
  const int64_t B = q.size(0), L = q.size(1), S = k.size(1), D = q.size(2);
  bool mask_batched = false;
  if (mask.defined()) {
    kernels::check_same_dtype(q, mask, "attention_probs (mask)");
    const bool ok2 = mask.dim() == 2 && mask.size(0) == L && mask.size(1) == S;
    const bool ok3 = mask.dim() == 3 && mask.size(0) == B && mask.size(1) == L && mask.size(2) == S;
    if (!ok2 && !ok3)
      throw std::invalid_argument("attention_probs: mask must be (" + std::to_string(L) + ", " + std::to_string(S) +
                                  ") or (" + std::to_string(B) + ", " + std::to_string(L) + ", " + std::to_string(S) +
                                  "), got " + describe(mask));
    mask_batched = ok3;
  }
  const Tensor Q = kernels::dense(q), K = kernels::dense(k);
  // Batch entries per thread: enough multiply-adds that splitting pays for itself.
  const int64_t batch_grain = std::max<int64_t>(1, kernels::kParallelGemmWork / std::max<int64_t>(L * S * D, 1));
  const Tensor M = mask.defined() ? kernels::dense(mask) : Tensor();
  Tensor P = Tensor::empty({B, L, S}, q.dtype());  // (B, L, S)
  AG_DISPATCH_FLOAT(q.dtype(), "attention_probs", [&] {
    const scalar_t ninf = -std::numeric_limits<scalar_t>::infinity();
    const scalar_t* pq = Q.data<scalar_t>();
    const scalar_t* pk = K.data<scalar_t>();
    const scalar_t* pm = M.defined() ? M.data<scalar_t>() : nullptr;
    scalar_t* pp = P.data<scalar_t>();
    parallel::parallel_for(B, batch_grain, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        scalar_t* Pb = pp + b * L * S;
        // scores (L, S) = scale · q_b (L, D) @ k_b (S, D)ᵀ, written into P then normalised in place
        if (L * S > 0) {
          if (D > 0)
            kernels::gemm(false, true, L, S, D, static_cast<scalar_t>(scale), pq + b * L * D, D, pk + b * S * D, D,
                          scalar_t(0), Pb, S);
          else
            std::fill(Pb, Pb + L * S, scalar_t(0));
        }
        const scalar_t* mb = pm ? pm + (mask_batched ? b * L * S : 0) : nullptr;
        for (int64_t i = 0; i < L; ++i) {
          scalar_t* row = Pb + i * S;
          if (mb)
            for (int64_t j = 0; j < S; ++j) row[j] += mb[i * S + j];
          if (causal)  // query i sits at position i + causal_offset: it may not see later keys
            for (int64_t j = std::max<int64_t>(0, i + causal_offset + 1); j < S; ++j) row[j] = ninf;
          kernels::softmax_row(row, row, S);
        }
      }
    });
  });
  if (should_record({&q, &k, &mask})) {
    const bool gq = q.requires_grad(), gk = k.requires_grad(), gm = mask.defined() && mask.requires_grad();
    // Q, K are q, k themselves when contiguous (the usual case), else dense copies for the kernel.
    record(P, "attention_probs", {q, k, mask},
           [sQ = gk ? SavedTensor::save(Q) : SavedTensor(), sK = gq ? SavedTensor::save(K) : SavedTensor(),
            sq = SavedTensor::save(q), sk = SavedTensor::save(k), smask = SavedTensor::save(mask),
            sP = SavedTensor::save_output(P), scale, causal, causal_offset, gq, gk, gm, mask_batched,
            dims = AttentionDims{B, L, S, D, batch_grain}](const Tensor& g) {
             // P = softmax(scale·Q·Kᵀ + mask)  =>
             //   dScores = P ⊙ (dP − Σ_j dP_j P_j)   (row-wise softmax backward; masked entries have P = 0)
             //   dQ = scale · dScores @ K,  dK = scale · dScoresᵀ @ Q,  dmask = dScores (summed over B for a 2-d mask)
             auto definition = [=](const std::vector<Tensor>& in) {
               return attention_probs_unfused(in[0], in[1], in[2], scale, causal, causal_offset);
             };
             return fused_backward("attention_probs_backward", {sq.unpack(), sk.unpack(), smask.unpack()}, g, definition,
                                   [&] {
                                     return attention_probs_backward_kernel(sP.unpack(), sQ.unpack(), sK.unpack(), g,
                                                                            scale, dims, gq, gk, gm, mask_batched);
                                   });
           });
  }
  return P;
}

}  // namespace ag
