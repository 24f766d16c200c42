#include "train/flops.h"

#include "models/language_model.h"

namespace ag::train {

double train_flops_per_token(const models::LanguageModel& model, int64_t batch) {
  return 3 * model.forward_flops(batch) / static_cast<double>(batch * model.block_size());
}

double mfu(double flops_per_token, double tokens_per_s, double peak_gflops) {
  return peak_gflops > 0 ? flops_per_token * tokens_per_s / (peak_gflops * 1e9) : 0;
}

}  // namespace ag::train
