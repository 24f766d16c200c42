// Model FLOPs utilisation (MFU), as nanoGPT and PaLM count it: the matmul FLOPs a training
// step needs (3 × the forward's: the forward, and two GEMMs of the same size per GEMM in
// backward) per second, over the machine's peak. Shared by the training log, TensorBoard's
// throughput/mfu and `attograd bench`. (A model's forward FLOPs come from
// LanguageModel::forward_flops.)
#pragma once
#include <cstdint>

namespace ag::models {
class LanguageModel;
}

namespace ag::train {

// OpenBLAS sgemm on `threads` of its own threads, n × n × n, the mean of `reps` timed calls
// after one untimed, in GFLOP/s. OpenBLAS's own thread count is restored afterwards.
double sgemm_gflops(int64_t n, int reps, int threads);

// The peak MFU is measured against: single-threaded sgemm 1024³ (how attograd runs its GEMMs:
// OpenBLAS on one thread inside each chunk of its pool) on the calling thread, times
// `threads`. About 0.1 s, so that every training run measures it for its log lines.
double sgemm_peak_gflops(int threads);

// FLOPs of one training step of `model` on `batch` sequences, per token of that batch.
double train_flops_per_token(const models::LanguageModel& model, int64_t batch);

// tokens_per_s × flops_per_token over peak_gflops (0 when the peak is not known).
double mfu(double flops_per_token, double tokens_per_s, double peak_gflops);

}  // namespace ag::train
