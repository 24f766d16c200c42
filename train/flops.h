// The machine's peak that MFU (model FLOPs utilisation) is measured against, shared by
// `attograd bench` and TensorBoard's throughput/mfu. (A model's own FLOPs come from
// LanguageModel::forward_flops; a training step costs 3 times its forward.)
#pragma once
#include <cstdint>

namespace ag::train {

// OpenBLAS sgemm on `threads` of its own threads, n × n × n, `reps` timed calls after one
// untimed, in GFLOP/s. OpenBLAS's own thread count is restored afterwards.
double sgemm_gflops(int64_t n, int reps, int threads);

// The better of sgemm 2048³ on one thread and on `threads` (on a machine whose cores share
// their FMA units, more threads do not add FLOPs). About a second.
double sgemm_peak_gflops(int threads);

}  // namespace ag::train
