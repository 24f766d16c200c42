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

}  // namespace ag::kernels::flash
