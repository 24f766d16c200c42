#include "train/flops.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

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

double sgemm_peak_gflops(int threads) { return std::max(sgemm_gflops(2048, 5, 1), sgemm_gflops(2048, 5, threads)); }

}  // namespace ag::train
