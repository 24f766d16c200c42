#include "tuning/peak_flops.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "tuning/kept.h"

namespace ag::tuning {

double sgemm_gflops(int64_t n, int threads, int reps, int trials, SgemmClock clock, Precision precision) {
  const int saved = openblas_get_num_threads();
  if (saved != threads) openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<size_t>(n * n), 1.0f), b(static_cast<size_t>(n * n), 0.5f), c(static_cast<size_t>(n * n));
  const AutocastGuard at(precision);
  auto sgemm = [&] { kernels::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  // In CPU time a thread waiting for a core does not count: on a 2-core AMD EPYC at load 9 the
  // wall-clock peak was 13.9 GFLOP/s per thread, at load 3–4 35.6 and 35.8 in CPU time.
  auto now = [clock] {
    if (clock == SgemmClock::Wall)
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return thread_cpu_seconds();
  };
  sgemm();  // untimed: page faults, the provider's buffers
  double best = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const double t0 = now();
    for (int r = 0; r < reps; ++r) sgemm();
    const double sec = now() - t0;
    best = std::max(best, static_cast<double>(reps) * 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / sec / 1e9);
  }
  if (saved != threads) openblas_set_num_threads(saved);
  return best;
}

double measure_sgemm_gflops_per_thread(Precision precision) {
  // attograd runs its GEMMs single-threaded (parallel::init_threads): the peak is one thread's.
  return sgemm_gflops(1024, 1, 2, 5, SgemmClock::ThreadCpu, precision);
}

// The kept value's name. Entries of an older name (wall-clock timings, perhaps taken on a busy
// machine) are not read: this machine's peak is measured again.
constexpr const char* kPeakField = "gflops_per_thread_cpu_time";

PeakFlops kept_peak_flops(int threads, Precision precision) {
  PeakFlops p;
  const std::string key = this_machine(precision).text();
  std::vector<double> kept;
  if (read_kept(key, {kPeakField}, kept)) {
    p.per_thread_gflops = kept[0];
    p.source = "kept in " + kept_path();
  } else {
    p.per_thread_gflops = measure_sgemm_gflops_per_thread(precision);
    p.source = "measured now, " + keep(key, {{kPeakField, p.per_thread_gflops}});
  }
  p.gflops = p.per_thread_gflops * std::max(threads, 1);
  return p;
}

}  // namespace ag::tuning
