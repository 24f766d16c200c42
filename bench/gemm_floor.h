// The GEMM floor of a training step: the step's own matrix multiplies, recorded shape by shape,
// then replayed on their own through the same provider at the same precision. No step that
// keeps every matmul on that provider can run faster than that replay, so it bounds what any
// other optimisation can buy.
//
// Instrumentation, not part of the library: this file defines cblas_sgemm, dnnl_sgemm and
// dnnl_gemm_bf16bf16f32 itself, so in a program linked with it (the `attograd` program and the
// tests; never attograd::core) every such call lands there first and goes on to the library's
// own. The library's GEMMs (autograd/kernels/gemm.h) carry no hook.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/autocast.h"

namespace ag::bench {

struct GemmShape {
  bool ta, tb;
  int64_t M, N, K;
  float beta;
};

// Runs `step` once on one thread and returns the shape of every float GEMM it made, in order.
std::vector<GemmShape> record_gemms(const std::function<void()>& step);
// True only inside record_gemms.
bool recording_gemms();

struct GemmFloor {
  int64_t calls = 0;
  double gflop = 0;  // multiply-adds × 2 over all the calls
  double ms = 0;     // one replay of all the calls, mean over the timed replays
};

// Replays `calls` on `threads` threads with no synchronisation between GEMMs: a GEMM big enough
// for attograd to split is split by rows as gemm_rows does, the small ones are dealt out to the
// threads in turn (as the per-head attention GEMMs are). `reps` timed replays after one warm-up.
// With the current provider (kernels::gemm_provider()); at BF16, the bf16 GEMM of its path on
// operands already rounded (the rounding a step does is the step's cost, not the floor's).
GemmFloor replay_gemms(const std::vector<GemmShape>& calls, int threads, int reps,
                       Precision precision = Precision::FP32);

}  // namespace ag::bench
