// Model FLOPs utilisation (MFU), as nanoGPT and PaLM count it: the matmul FLOPs a training
// step needs (3 × the forward's: the forward, and two GEMMs of the same size per GEMM in
// backward) per second, over the machine's peak (tuning/peak_flops.h: measured once per
// machine and kept). Shared by the training log, metrics.jsonl, TensorBoard's throughput/mfu
// and `attograd bench`. A model's forward FLOPs come from its parameter table
// (LanguageModel::forward_flops).
#pragma once
#include <cstdint>

namespace ag::models {
class LanguageModel;
}

namespace ag::train {

// FLOPs of one training step of `model` on `batch` sequences, per token of that batch.
double train_flops_per_token(const models::LanguageModel& model, int64_t batch);

// tokens_per_s × flops_per_token over peak_gflops (0 when the peak is not known).
double mfu(double flops_per_token, double tokens_per_s, double peak_gflops);

}  // namespace ag::train
