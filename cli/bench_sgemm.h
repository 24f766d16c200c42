// `attograd bench sgemm` and `bench train`'s communication figures: measurements of the
// machine for the benchmarks only (the training run's own peak is train/peak_flops.h).
#pragma once
#include <cstdint>

#include "distributed/comm.h"

namespace ag::cli {

// OpenBLAS sgemm on `threads` of its own threads, n × n × n, the mean of `reps` timed calls
// after one untimed, in GFLOP/s. OpenBLAS's own thread count is restored afterwards.
double sgemm_gflops(int64_t n, int reps, int threads);

// A blocking allreduce of buffers shaped like the reducer's buckets, one after the other, with
// no computation to hide it behind, in seconds: the reference for the overlap `bench train`
// reports. `numels` are the reduced parameters' sizes, in the reducer's parameter order.
double time_blocking_allreduce(distributed::Comm& comm, const distributed::Reducer& reducer, const std::vector<int64_t>& numels);

}  // namespace ag::cli
