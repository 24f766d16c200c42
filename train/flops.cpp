#include "train/flops.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "models/language_model.h"

namespace ag::train {

double sgemm_gflops(int64_t n, int reps, int threads) {
  using Clock = std::chrono::steady_clock;
  const int saved = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  const int in = static_cast<int>(n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1, a.data(), in, b.data(), in, 0, c.data(), in);
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1, a.data(), in, b.data(), in, 0, c.data(), in);
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  openblas_set_num_threads(saved);
  return 2.0 * static_cast<double>(n * n * n) * reps / sec / 1e9;
}

double sgemm_peak_gflops(int threads) {
  // Measured on the calling thread alone, with OpenBLAS single-threaded as attograd runs it in
  // each chunk, and counted once per thread. Running the threads' sgemms at once would measure
  // shared FMA units better, but each concurrent sgemm 1024³ makes OpenBLAS 0.3.21 map a
  // 128 MB buffer, and under a memory limit it then waits forever (cli.harden.threads); the
  // training run's own GEMMs never need that. On a machine whose threads share cores this
  // overstates the peak, so the MFU errs low.
  return sgemm_gflops(1024, 4, 1) * std::max(threads, 1);
}

double train_flops_per_token(const models::LanguageModel& model, int64_t batch) {
  return 3 * model.forward_flops(batch) / static_cast<double>(batch * model.block_size());
}

double mfu(double flops_per_token, double tokens_per_s, double peak_gflops) {
  return peak_gflops > 0 ? flops_per_token * tokens_per_s / (peak_gflops * 1e9) : 0;
}

}  // namespace ag::train
