// attograd's own threads. One small pool runs the data-parallel parts of ops (rows of a GEMM,
// batches of attention, chunks of element-wise kernels) on every core, and OpenBLAS runs
// single-threaded inside each chunk. Owning the threads avoids two pools (OpenBLAS's and an
// OpenMP one) fighting over two cores, and lets small GEMMs stay on one thread.
//
// Work is split into fixed chunks that depend only on the sizes and the thread count, never on
// timing, so results are reproducible for a given thread count.
#pragma once
#include <cstdint>
#include <utility>

namespace ag::parallel {

// Threads used by parallel_for (the caller counts as one). Default: the number of cores.
// Also pins OpenBLAS to one thread, since attograd splits GEMMs itself.
void set_num_threads(int n);
int num_threads();

namespace detail {
using ChunkFn = void (*)(void* ctx, int64_t begin, int64_t end);
void run(int64_t n, int64_t grain, ChunkFn fn, void* ctx);
}  // namespace detail

// Calls f(begin, end) on disjoint ranges covering [0, n), in parallel when n ≥ 2·grain.
// f must not throw. No allocation per call.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  auto trampoline = [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e); };
  detail::run(n, grain, trampoline, &f);
}

}  // namespace ag::parallel
