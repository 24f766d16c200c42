// scaled_dot_product_attention and self_attention_qkv: O = softmax(scale · Q·Kᵀ + causal mask)·V
// in O(L + S) memory per (batch·head) slice (kernels/flash.h). The forward saves only O and the
// row logsumexp (BH, L); the backward recomputes P block by block. Heads are read and written in
// place through per-slice offsets and row strides, so MultiheadAttention neither splits nor
// merges heads. The higher derivatives come from the definition with ops, matmul(attention_probs(q,
// k), v), which materialises P (fused_backward.h).
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/flash.h"
#include "autograd/ops.h"
#include "autograd/ops/fused_backward.h"
#include "autograd/profiler.h"

namespace ag {

namespace {
using kernels::flash::Dims;
using kernels::flash::Slices;
using kernels::flash::head_slices;

// t itself when the kernels can read it in place (rows contiguous, rows not overlapping), else a
// dense copy (data only: the node's inputs stay the caller's tensors).
Tensor readable(const Tensor& t) {
  const int64_t R = t.size(-2), C = t.size(-1);
  const bool rows_ok = C <= 1 || t.strides().back() == 1;
  const bool ld_ok = R <= 1 || t.strides()[t.dim() - 2] >= std::max<int64_t>(C, 1);
  return rows_ok && ld_ok ? t : t.detach().contiguous();
}

// One slice per index of the batch dims of a (..., R, C) tensor, in row-major order.
Slices batch_slices(const Tensor& t) {
  const int64_t nb = t.dim() - 2;
  Slices s;
  // BLAS wants a row stride of at least max(1, C) even where only one row is read
  s.ld = t.size(-2) <= 1 ? std::max<int64_t>(t.size(-1), 1) : t.strides()[nb];
  int64_t B = 1;
  for (int64_t d = 0; d < nb; ++d) B *= t.size(d);
  s.off.resize(static_cast<size_t>(B));
  std::vector<int64_t> idx(static_cast<size_t>(nb), 0);
  int64_t off = 0;
  for (int64_t b = 0; b < B; ++b) {
    s.off[static_cast<size_t>(b)] = off;
    for (int64_t d = nb - 1; d >= 0; --d) {  // carry: the next batch index
      off += t.strides()[d];
      if (++idx[d] < t.size(d)) break;
      off -= t.strides()[d] * t.size(d);
      idx[d] = 0;
    }
  }
  return s;
}

template <class F>
void dispatch(DType dt, const char* op, F&& f) {
  AG_DISPATCH_FLOAT(dt, op, [&] { f(scalar_t(0)); });
}

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Attention with ops on q (B, L, D), k (B, S, D), v (B, S, Dv): matmul(attention_probs(q, k), v),
// the definition of both ops below (their higher derivatives come from it: fused_backward.h).
Tensor attention_definition(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                            int64_t offset) {
  return matmul(attention_probs(q, k, Tensor(), scale, causal, offset), v);  // (B, L, Dv)
}

double default_scale(int64_t D, std::optional<double> scale) {
  return scale ? *scale : (D > 0 ? 1.0 / std::sqrt(static_cast<double>(D)) : 1.0);
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale_opt, int64_t causal_offset) {
  AG_PROFILE_OP("scaled_dot_product_attention");
  const char* op = "scaled_dot_product_attention";
  kernels::check_same_dtype(q, k, op);
  kernels::check_same_dtype(q, v, op);
  const int64_t nd = q.dim();
  auto batch = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  if (nd < 2 || k.dim() != nd || v.dim() != nd || batch(k) != batch(q) || batch(v) != batch(q) ||
      k.size(-1) != q.size(-1) || v.size(-2) != k.size(-2))
    throw std::invalid_argument(std::string(op) + ": expected q (..., L, D), k (..., S, D), v (..., S, Dv) with equal "
                                "batch dims, got " + describe(q) + ", " + describe(k) + ", " + describe(v));
  Dims d;
  d.L = q.size(-2), d.S = k.size(-2), d.D = q.size(-1), d.Dv = v.size(-1);
  d.BH = shape_numel(batch(q));
  d.causal = is_causal, d.offset = causal_offset;
  const double scale = default_scale(d.D, scale_opt);
  Shape out_shape = q.shape();
  out_shape.back() = d.Dv;
  Tensor O = Tensor::empty(out_shape, q.dtype());  // (..., L, Dv)
  const Tensor lse = Tensor::empty({d.BH, d.L}, q.dtype());
  {
    const Tensor Q = readable(q), K = readable(k), V = readable(v);
    dispatch(q.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      kernels::flash::forward<T>(d, static_cast<T>(scale), Q.data<T>(), batch_slices(Q), K.data<T>(), batch_slices(K),
                                 V.data<T>(), batch_slices(V), O.data<T>(), batch_slices(O), lse.data<T>());
    });
  }
  if (should_record({&q, &k, &v})) {
    const bool gq = q.requires_grad(), gk = k.requires_grad(), gv = v.requires_grad();
    record(O, op, {q, k, v},
           [sq = SavedTensor::save(q), sk = SavedTensor::save(k), sv = SavedTensor::save(v),
            sO = SavedTensor::save_output(O), lse, d, scale, gq, gk, gv](const Tensor& g) {
             // O = P·V, P = softmax(scale·Q·Kᵀ + mask)  =>  dV = Pᵀ·dO,  dP = dO·Vᵀ,
             //   dS = P ⊙ (dP − Σ_j dP_j P_j),  dQ = scale·dS·K,  dK = scale·dSᵀ·Q   (kernels/flash.h)
             const Tensor q = sq.unpack(), k = sk.unpack(), v = sv.unpack();
             auto definition = [d, scale](const std::vector<Tensor>& in) {  // on (B, L, ·) views
               const Tensor o = attention_definition(reshape(in[0], {d.BH, d.L, d.D}), reshape(in[1], {d.BH, d.S, d.D}),
                                                     reshape(in[2], {d.BH, d.S, d.Dv}), scale, d.causal, d.offset);
               Shape out_shape = in[0].shape();
               out_shape.back() = d.Dv;
               return reshape(o, out_shape);
             };
             return fused_backward("scaled_dot_product_attention_backward", {q, k, v}, g, definition, [&] {
               const Tensor Q = readable(q), K = readable(k), V = readable(v), G = readable(g), O = sO.unpack();
               Tensor dq = gq ? Tensor::empty(q.shape(), q.dtype()) : Tensor();
               Tensor dk = gk ? Tensor::empty(k.shape(), k.dtype()) : Tensor();
               Tensor dv = gv ? Tensor::empty(v.shape(), v.dtype()) : Tensor();
               dispatch(q.dtype(), "scaled_dot_product_attention backward", [&](auto zero) {
                 using T = decltype(zero);
                 kernels::flash::backward<T>(d, static_cast<T>(scale), Q.data<T>(), batch_slices(Q), K.data<T>(),
                                             batch_slices(K), V.data<T>(), batch_slices(V), O.data<T>(),
                                             batch_slices(O), G.data<T>(), batch_slices(G), lse.data<T>(), ptr<T>(dq),
                                             gq ? batch_slices(dq) : Slices(), ptr<T>(dk),
                                             gk ? batch_slices(dk) : Slices(), ptr<T>(dv),
                                             gv ? batch_slices(dv) : Slices());
               });
               return Grads{dq, dk, dv};
             });
           });
  }
  return O;
}

Tensor self_attention_qkv(const Tensor& qkv, int64_t H, bool is_causal, std::optional<double> scale_opt) {
  AG_PROFILE_OP("self_attention_qkv");
  const char* op = "self_attention_qkv";
  kernels::check_float(qkv, op);
  if (H <= 0 || qkv.dim() != 3 || qkv.size(2) == 0 || qkv.size(2) % (3 * H) != 0)
    throw std::invalid_argument(std::string(op) + ": expected qkv (N, L, 3·E) with E a positive multiple of num_heads " +
                                std::to_string(H) + ", got " + describe(qkv));
  const int64_t N = qkv.size(0), L = qkv.size(1), E = qkv.size(2) / 3, hd = E / H;
  Dims d;
  d.BH = N * H, d.L = L, d.S = L, d.D = hd, d.Dv = hd, d.causal = is_causal;
  const double scale = default_scale(hd, scale_opt);
  // q, k, v of head h: columns h·hd, E + h·hd, 2E + h·hd of each (N, L, 3E) row; the context
  // of head h: columns h·hd of each (N, L, E) row
  const Slices sq = head_slices(N, H, L, 3 * E, 0, hd), sk = head_slices(N, H, L, 3 * E, E, hd),
               sv = head_slices(N, H, L, 3 * E, 2 * E, hd), so = head_slices(N, H, L, E, 0, hd);
  Tensor O = Tensor::empty({N, L, E}, qkv.dtype());  // (N, L, E)
  const Tensor lse = Tensor::empty({N * H, L}, qkv.dtype());
  // Under bf16 autocast, q, k and v rounded once, head by head, by the forward, for every tile
  // GEMM of the forward and (kept with the graph) of the backward: each GEMM had rounded its own
  // tiles, and the backward each slice again. (N·L·3E bf16 values held per layer until then.)
  std::shared_ptr<kernels::flash::RoundedHeads> heads;
  {
    const Tensor X = kernels::dense(qkv);
    dispatch(qkv.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      const T* x = X.data<T>();
      if constexpr (std::is_same_v<T, float>) {
        if (is_autocast_enabled() && hd > 0) {
          heads = std::make_shared<kernels::flash::RoundedHeads>();
          heads->reshape(d, kernels::bf16_path_is_native());
        }
      }
      kernels::flash::forward<T>(d, static_cast<T>(scale), x, sq, x, sk, x, sv, O.data<T>(), so, lse.data<T>(),
                                 heads.get());
    });
  }
  if (should_record({&qkv})) {
    record(O, op, {qkv}, [sx = SavedTensor::save(qkv), sO = SavedTensor::save_output(O), lse, d, scale, N, H, L, E, hd,
                          sq, sk, sv, so, heads](const Tensor& g) {
      // the backward of scaled_dot_product_attention per head, read from and written into the
      // packed columns of qkv (N, L, 3E)
      auto definition = [d, scale, N, H, L, E, hd](const std::vector<Tensor>& in) {  // split heads, attention, merge
        const Tensor t = reshape(permute(reshape(in[0], {N, L, 3, H, hd}), {2, 0, 3, 1, 4}), {3, N * H, L, hd});
        auto part = [&](int64_t i) { return squeeze(narrow(t, 0, i, 1), 0); };  // (N·H, L, hd)
        const Tensor o = attention_definition(part(0), part(1), part(2), scale, d.causal, d.offset);  // (N·H, L, hd)
        return reshape(permute(reshape(o, {N, H, L, hd}), {0, 2, 1, 3}), {N, L, E});
      };
      const Tensor qkv = sx.unpack();
      return fused_backward("self_attention_qkv_backward", {qkv}, g, definition, [&] {
        const Tensor X = kernels::dense(qkv), G = kernels::dense(g), O = sO.unpack();
        Tensor dx = Tensor::empty({N, L, 3 * E}, qkv.dtype());  // every element written: the slices tile it
        dispatch(qkv.dtype(), "self_attention_qkv backward", [&](auto zero) {
          using T = decltype(zero);
          const T* x = X.data<T>();
          T* dxp = dx.data<T>();
          kernels::flash::backward<T>(d, static_cast<T>(scale), x, sq, x, sk, x, sv, O.data<T>(), so, G.data<T>(), so,
                                      lse.data<T>(), dxp, sq, dxp, sk, dxp, sv, heads.get());
        });
        return Grads{dx};
      });
    });
  }
  return O;
}

}  // namespace ag
