// FLOPs of a GPT step and the machine's peak they are measured against: the one definition of
// MFU (model FLOPs utilisation) shared by `attograd bench` and TensorBoard's throughput/mfu.
#pragma once
#include <cstdint>

#include "models/transformer_lm.h"

namespace ag::train {

// Matmul FLOPs of one forward pass over a (batch, block_size) batch; a training step (forward
// and backward) costs 3 times that.
double forward_flops(const models::GPTConfig& c, int64_t batch);
inline double train_step_flops(const models::GPTConfig& c, int64_t batch) { return 3 * forward_flops(c, batch); }

// OpenBLAS sgemm on `threads` of its own threads, n × n × n, `reps` timed calls after one
// untimed, in GFLOP/s. OpenBLAS's own thread count is restored afterwards.
double sgemm_gflops(int64_t n, int reps, int threads);

// The peak MFU divides by: the better of sgemm 2048³ on one thread and on `threads` (on a
// machine whose cores share their FMA units, more threads do not add FLOPs). About a second.
double sgemm_peak_gflops(int threads);

// Model FLOPs per second over the peak, for a training step of batch × block_size tokens.
inline double train_mfu(const models::GPTConfig& c, double tokens_per_s, double peak_gflops) {
  return train_step_flops(c, 1) / static_cast<double>(c.block_size) * tokens_per_s / (peak_gflops * 1e9);
}

}  // namespace ag::train
