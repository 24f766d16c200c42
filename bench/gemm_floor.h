// The GEMM floor of a training step: the step's own matrix multiplies, recorded shape by shape,
// then replayed on their own through the same OpenBLAS. No step that keeps every matmul on
// OpenBLAS can run faster than that replay, so it bounds what any other optimisation can buy.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/kernels/gemm.h"

namespace ag::bench {

// Runs `step` once on one thread and returns the shape of every float GEMM it made, in order.
std::vector<kernels::GemmShape> record_gemms(const std::function<void()>& step);

struct GemmFloor {
  int64_t calls = 0;
  double gflop = 0;  // multiply-adds × 2 over all the calls
  double ms = 0;     // one replay of all the calls, mean over the timed replays
};

// Replays `calls` on `threads` threads with no synchronisation between GEMMs: a GEMM big enough
// for attograd to split is split by rows as gemm_rows does, the small ones are dealt out to the
// threads in turn (as the per-head attention GEMMs are). `reps` timed replays after one warm-up.
GemmFloor replay_gemms(const std::vector<kernels::GemmShape>& calls, int threads, int reps);

}  // namespace ag::bench
