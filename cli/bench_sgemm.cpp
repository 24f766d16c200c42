#include "cli/bench_sgemm.h"

#include <cblas.h>

#include <chrono>
#include <vector>

namespace ag::cli {

using Clock = std::chrono::steady_clock;

double sgemm_gflops(int64_t n, int reps, int threads) {
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

double time_blocking_allreduce(distributed::Comm& comm, const distributed::Reducer& reducer, const std::vector<int64_t>& numels) {
  std::vector<std::vector<float>> buffers;
  for (const auto& bucket : reducer.buckets()) {
    int64_t n = 0;
    for (size_t i : bucket) n += numels[i];
    buffers.emplace_back(static_cast<size_t>(n), 1.0f);
  }
  const auto t0 = Clock::now();
  for (auto& buf : buffers) comm.allreduce_sum(buf.data(), static_cast<int64_t>(buf.size()));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace ag::cli
