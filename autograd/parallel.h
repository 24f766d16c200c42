// attograd's own threads. One small pool runs the data-parallel parts of ops (rows of a GEMM,
// batches of attention, chunks of element-wise kernels) on every core, and OpenBLAS runs
// single-threaded inside each chunk. Owning the threads avoids two pools (OpenBLAS's and an
// OpenMP one) fighting over two cores, and lets small GEMMs stay on one thread.
//
// Work is split into fixed chunks that depend only on the sizes and the thread count, never on
// timing, so results are reproducible for a given thread count.
//
// Setting up: a program calls init_threads(n) once at start (the attograd command does). It
// sizes the pool and pins OpenBLAS to one thread for the whole process, since attograd splits
// GEMMs itself. A program that embeds the library and never calls it gets a pool of one thread
// per core on first use, and its OpenBLAS settings are left as they are.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace ag::parallel {

// The most threads a pool may have; more is refused (std::invalid_argument).
constexpr int kMaxThreads = 1024;

// set_num_threads(n), then openblas_set_num_threads(1) for the whole process.
void init_threads(int n = 0);

// Resizes the pool to n threads (the caller counts as one); 0 means one per core, and
// n < 0 or n > kMaxThreads throws std::invalid_argument. When the system cannot start that
// many threads (a process or memory limit), the pool runs on the ones it could start and says
// so on stderr once; num_threads() tells how many. Does not touch OpenBLAS.
// Safe while other threads are inside parallel_for: their jobs finish on the pool they started
// on, which ends after them; jobs started after the call run on the new pool.
void set_num_threads(int n);
int num_threads();

namespace detail {
using ChunkFn = void (*)(void* ctx, int64_t begin, int64_t end);
void run(int64_t n, int64_t grain, ChunkFn fn, void* ctx);
}  // namespace detail

// Calls f(begin, end) on disjoint ranges covering [0, n), in parallel when n ≥ 2·grain.
// A parallel_for inside f runs inline on the calling thread. If f throws, every other chunk
// still finishes (they may use the caller's stack), then the first exception is rethrown
// here and the pool is ready for the next call. No allocation per call.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  auto trampoline = [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e); };
  detail::run(n, grain, trampoline, &f);
}

// Items [0, n) that are independent and may take uneven time on the threads (attention's
// slices: a thread whose core is busier, or that reads the other core's cache, runs slower).
// f(next) runs once on each thread taking part, and next() hands out that thread's next item,
// or −1 when none is left. Each thread first takes its own share, the part parallel_for would
// give it, in order (so it reads the rows the ops before wrote on its own core), and then
// helps with the other shares from their ends, so a slower thread takes fewer items instead
// of the others waiting for it. Only for items whose results do not depend on which thread
// computes them; f keeps its per-thread scratch across its items. Parallel when n ≥ 2·grain.
template <class F>
void parallel_for_claimed(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (n >= (int64_t(1) << 32)) throw std::length_error("parallel_for_claimed: 2^32 items or more");
  const int64_t parts = n >= 2 * std::max<int64_t>(grain, 1) ? num_threads() : 1;
  // Per share: (next unclaimed item << 32) | its end; its owner takes from the front, a helper
  // from the back, both by compare-and-swap, until the two meet.
  std::vector<std::atomic<uint64_t>> share(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    const uint64_t begin = static_cast<uint64_t>(n * p / parts), end = static_cast<uint64_t>(n * (p + 1) / parts);
    share[static_cast<size_t>(p)].store(begin << 32 | end);
  }
  auto take = [&](int64_t p, bool front) -> int64_t {
    std::atomic<uint64_t>& s = share[static_cast<size_t>(p)];
    uint64_t v = s.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t lo = v >> 32, hi = v & 0xffffffffu;
      if (lo >= hi) return -1;
      const uint64_t next = front ? (lo + 1) << 32 | hi : lo << 32 | (hi - 1);
      if (s.compare_exchange_weak(v, next, std::memory_order_relaxed)) return static_cast<int64_t>(front ? lo : hi - 1);
    }
  };
  parallel_for(parts, 1, [&](int64_t own, int64_t) {
    auto next = [&, own]() -> int64_t {
      if (const int64_t i = take(own, true); i >= 0) return i;
      for (int64_t k = 1; k < parts; ++k)  // the others' shares, from their ends
        if (const int64_t i = take((own + k) % parts, false); i >= 0) return i;
      return -1;
    };
    f(next);
  });
}

// Element-wise work over many arrays (a model's parameters, their gradients) as one index range
// [0, Σ n): one pool hand-off for all of them, cut at fixed offsets every `grain` elements,
// where a parallel_for per array would run each array smaller than the grain on one thread.
// f(span, lo, hi) gets the part [lo, hi) of one span (Span has a member int64_t n). Meant for
// updates where each element's result does not depend on the cuts, so that the bits are those
// of a loop over the arrays one by one, on any thread count.
template <class Span, class F>
void parallel_for_spans(const std::vector<Span>& spans, int64_t grain, F&& f) {
  std::vector<int64_t> start(spans.size() + 1, 0);  // prefix sums of the spans' lengths
  for (size_t i = 0; i < spans.size(); ++i) start[i + 1] = start[i] + spans[i].n;
  parallel_for(start.back(), grain, [&](int64_t b, int64_t e) {
    size_t i = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), b) - start.begin()) - 1;
    for (; i < spans.size() && start[i] < e; ++i) {
      const int64_t lo = std::max(b, start[i]) - start[i], hi = std::min(e, start[i + 1]) - start[i];
      if (hi > lo) f(spans[i], lo, hi);
    }
  });
}

}  // namespace ag::parallel
