// The float32 block kernels of flash.h: the reference code compiled once per instruction set
// (AVX-512, AVX2+FMA, baseline) and picked at run time, with the vectorised exp_f32.
#include "autograd/kernels/flash.h"
#include "autograd/kernels/multiversion.h"

namespace ag::kernels::flash {

AG_MULTIVERSION void online_softmax_block(float* s, int64_t rows, int64_t n, int64_t ld, float* m, float* l,
                                          float* alpha) {
  online_softmax_block_ref(s, rows, n, ld, m, l, alpha);
}

AG_MULTIVERSION void softmax_grad_block(float* s, float* dp, int64_t rows, int64_t n, int64_t ld, const float* lse,
                                        const float* drow) {
  softmax_grad_block_ref(s, dp, rows, n, ld, lse, drow);
}

namespace {
AG_MULTIVERSION void softmax_grad_rounded(const float* s, const float* dp, int64_t rows, int64_t n, int64_t ld,
                                          const float* lse, const float* drow, uint16_t* p, uint16_t* ds) {
  softmax_grad_block_rounded_ref(s, dp, rows, n, ld, lse, drow, p, ds);
}
AG_MULTIVERSION void softmax_grad_rounded(const float* s, const float* dp, int64_t rows, int64_t n, int64_t ld,
                                          const float* lse, const float* drow, float* p, float* ds) {
  softmax_grad_block_rounded_ref(s, dp, rows, n, ld, lse, drow, p, ds);
}
}  // namespace

void softmax_grad_block_rounded(const float* s, const float* dp, int64_t rows, int64_t n, int64_t ld, const float* lse,
                                const float* drow, Bf16Matrix& p, Bf16Matrix& ds, bool native) {
  p.reshape(rows, n, native);
  ds.reshape(rows, n, native);
  if (native)
    softmax_grad_rounded(s, dp, rows, n, ld, lse, drow, p.bits_row(0), ds.bits_row(0));
  else
    softmax_grad_rounded(s, dp, rows, n, ld, lse, drow, p.values_row(0), ds.values_row(0));
}

}  // namespace ag::kernels::flash
