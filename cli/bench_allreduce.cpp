#include "cli/bench_allreduce.h"

#include <chrono>

namespace ag::cli {

double time_blocking_allreduce(distributed::Comm& comm, const distributed::Reducer& reducer, const std::vector<int64_t>& numels) {
  std::vector<std::vector<float>> buffers;
  for (const auto& bucket : reducer.buckets()) {
    int64_t n = 0;
    for (size_t i : bucket) n += numels[i];
    buffers.emplace_back(static_cast<size_t>(n), 1.0f);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& buf : buffers) comm.allreduce_sum(buf.data(), static_cast<int64_t>(buf.size()));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ag::cli
