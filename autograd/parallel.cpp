#include "autograd/parallel.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ag::parallel {

namespace {

// Workers wait for a new job (a generation number), run their chunk, and report done. They
// spin briefly before sleeping, because jobs come in quick bursts during a training step.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into size() contiguous chunks; chunk 0 runs on the caller. One job at a
  // time: callers on other threads wait their turn.
  void run(int64_t n, detail::ChunkFn fn, void* ctx) {
    std::lock_guard<std::mutex> one_job(run_mu_);
    const int parts = size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      parts_ = parts;
      pending_.store(parts - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    chunk(0);
    // Wait for the workers; their chunks are about as long as ours, so spinning is cheap.
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

 private:
  void chunk(int part) {
    const int64_t b = n_ * part / parts_, e = n_ * (part + 1) / parts_;
    if (b < e) fn_(ctx_, b, e);
  }

  void loop(int part) {
    uint64_t seen = 0;
    for (;;) {
      // Spin a little, then sleep until the generation changes.
      int spins = 0;
      while (generation_.load(std::memory_order_acquire) == seen && spins < 20000) {
        ++spins;
        if (spins > 2000) std::this_thread::yield();
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      chunk(part);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_, mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  detail::ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 1;
};

int default_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(std::min(hw, 64u)) : 1;
}

std::mutex g_config_mu;
Pool* g_pool = nullptr;  // created on first use; leaked at exit on purpose (workers may be asleep)
int g_threads = 0;
thread_local bool t_inside = false;  // nested parallel_for runs inline

Pool* pool() {
  std::lock_guard<std::mutex> lock(g_config_mu);
  if (!g_pool) {
    if (g_threads == 0) g_threads = default_threads();
    openblas_set_num_threads(1);
    g_pool = new Pool(g_threads);
  }
  return g_pool;
}

}  // namespace

void set_num_threads(int n) {
  if (n < 1) n = default_threads();
  std::lock_guard<std::mutex> lock(g_config_mu);
  openblas_set_num_threads(1);
  if (g_pool && g_pool->size() == n) return;
  delete g_pool;
  g_pool = new Pool(n);
  g_threads = n;
}

int num_threads() { return pool()->size(); }

namespace detail {
void run(int64_t n, int64_t grain, ChunkFn fn, void* ctx) {
  Pool* p = pool();
  if (t_inside || p->size() == 1 || n < 2 * std::max<int64_t>(grain, 1)) {
    fn(ctx, 0, n);
    return;
  }
  t_inside = true;
  p->run(n, fn, ctx);
  t_inside = false;
}
}  // namespace detail

}  // namespace ag::parallel
