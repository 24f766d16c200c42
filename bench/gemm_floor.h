// The GEMM floor of a training step: the step's own matrix multiplies, recorded shape by shape,
// then replayed on their own through the same OpenBLAS. No step that keeps every matmul on
// OpenBLAS can run faster than that replay, so it bounds what any other optimisation can buy.
//
// Instrumentation, not part of the library: this file defines cblas_sgemm itself, so in a
// program linked with it (the `attograd` program and the tests; never attograd::core) every
// sgemm call lands there first and goes on to OpenBLAS's own. The library's GEMMs
// (autograd/kernels/gemm.h) carry no hook.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

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
GemmFloor replay_gemms(const std::vector<GemmShape>& calls, int threads, int reps);

}  // namespace ag::bench
