#include "autograd/parallel.h"

#include "autograd/async_signals.h"
#include "autograd/autocast.h"
#include "autograd/profiler.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace ag::parallel {

namespace {

// True on a thread running a chunk: a nested parallel_for there runs inline. Always true on the
// workers: a nested call from one would otherwise wait for the job it is part of.
thread_local bool t_inside = false;

// Workers wait for a new job (a generation number), then claim its chunks one at a time from
// a shared counter, as the caller does. The chunk boundaries depend only on n and the thread
// count, so results do not depend on who runs which chunk; but when a worker is slow to wake
// (its vCPU stolen, or asleep), the caller runs that worker's chunk itself instead of waiting.
// Workers spin briefly before sleeping, because jobs come in quick bursts during a step.
class Pool {
 public:
  // Starts threads - 1 workers, or as many as the system allows: a process or memory limit
  // makes std::thread throw, and the pool then runs on fewer (parts follow size()).
  explicit Pool(int threads) {
    workers_.reserve(static_cast<size_t>(threads));
    try {
      for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { loop(); });
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "attograd: could start only %d of %d threads (%s); running on %d\n", size(), threads,
                   e.what(), size());
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into size() contiguous chunks, run by whichever thread claims each first
  // (the caller included). One job at a time: callers on other threads wait their turn.
  void run(int64_t n, detail::ChunkFn fn, void* ctx) {
    std::lock_guard<std::mutex> one_job(run_mu_);
    const int parts = size();
    const uint32_t job = static_cast<uint32_t>(generation_.load(std::memory_order_relaxed) + 1);
    // The job's fields are stable from here until every chunk is done: a worker reads them
    // only after claiming a chunk of this job, and the next job waits for done_ == parts.
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    precision_ = autocast_precision();
    done_.store(0, std::memory_order_relaxed);
    claim_.store(uint64_t(job) << 32, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    work(job);
    // Wait for chunks still running on workers even when one of ours threw: theirs may use
    // the caller's stack (ctx). Every chunk is claimed by now, so this wait is short.
    while (done_.load(std::memory_order_acquire) != parts) std::this_thread::yield();
    if (error_) {
      std::exception_ptr e = nullptr;
      std::swap(e, error_);  // the next job starts clean
      std::rethrow_exception(e);
    }
  }

 private:
  // Claims and runs chunks of `job` until none is left (or the job is over).
  void work(uint32_t job) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<uint32_t>(c >> 32) != job) return;  // a later job: ours is finished
      const int part = static_cast<int>(c & 0xffffffffu);
      if (part >= size()) return;
      if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      chunk(part);
      done_.fetch_add(1, std::memory_order_acq_rel);
      c = claim_.load(std::memory_order_acquire);
    }
  }

  void chunk(int part) {
    const int64_t b = n_ * part / size(), e = n_ * (part + 1) / size();
    if (b >= e) return;
    const profiler::RecordScope profile("pool task", profiler::Category::PoolTask, b, e);
    // The chunk runs under the caller's autocast setting, as if the caller ran it (a worker's
    // own setting is never anything else between jobs).
    const Precision own = autocast_precision();
    ag::detail::set_autocast_precision(precision_);
    try {
      fn_(ctx_, b, e);
    } catch (...) {  // kept for run() to rethrow; an exception escaping a worker would terminate
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    ag::detail::set_autocast_precision(own);
  }

  void loop() {
    t_inside = true;
    // A worker needs no signal (one sent to the process goes to a thread that does not hold
    // it), and holding them for life spares each oneDNN GEMM here its two rt_sigprocmask calls.
    hold_async_signals_for_this_thread();
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
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      work(static_cast<uint32_t>(seen));
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_, mu_, error_mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};  // the current job's number (its low 32 bits tag claim_)
  std::atomic<uint64_t> claim_{0};       // (job << 32) | next unclaimed chunk
  std::atomic<int> done_{0};             // chunks of the current job finished
  std::atomic<int> sleepers_{0};         // workers waiting on cv_
  bool stop_ = false;
  std::exception_ptr error_;  // the first exception of the current job
  detail::ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  Precision precision_ = Precision::FP32;  // the caller's autocast setting (autograd/autocast.h)
};

int default_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(std::min(hw, 64u)) : 1;
}

// The pool is shared by whoever is running a job on it: set_num_threads swaps in a new one, and
// the old one ends (joins its workers) when its last job returns, so that a resize while another
// thread is inside parallel_for (a Python thread's matmul beside torch.set_num_threads) neither
// frees the pool under that job nor waits on it.
std::mutex g_config_mu;
auto* g_pool = new std::shared_ptr<Pool>;  // leaked at exit on purpose (workers may be asleep)
int g_threads = 0;

std::shared_ptr<Pool> pool() {
  std::lock_guard<std::mutex> lock(g_config_mu);
  if (!*g_pool) {
    if (g_threads == 0) g_threads = default_threads();
    *g_pool = std::make_shared<Pool>(g_threads);
  }
  return *g_pool;
}

// Marks this thread as inside a parallel_for for its lifetime, so nested calls run inline;
// restored even when the body throws.
struct InsideGuard {
  InsideGuard() { t_inside = true; }
  ~InsideGuard() { t_inside = false; }
  InsideGuard(const InsideGuard&) = delete;
  InsideGuard& operator=(const InsideGuard&) = delete;
};

}  // namespace

void set_num_threads(int n) {
  if (n < 0 || n > kMaxThreads)
    throw std::invalid_argument("set_num_threads: " + std::to_string(n) + " threads; give 0 (one per core) to " +
                                std::to_string(kMaxThreads));
  if (n == 0) n = default_threads();
  std::shared_ptr<Pool> old;  // ends outside the lock, once no job runs on it
  {
    std::lock_guard<std::mutex> lock(g_config_mu);
    if (*g_pool && g_threads == n) return;
    old = std::move(*g_pool);
    *g_pool = std::make_shared<Pool>(n);
    g_threads = n;
  }
}

void init_threads(int n) {
  set_num_threads(n);
  openblas_set_num_threads(1);
}

int num_threads() { return pool()->size(); }

namespace detail {
void run(int64_t n, int64_t grain, ChunkFn fn, void* ctx) {
  if (t_inside || n < 2 * std::max<int64_t>(grain, 1)) {
    fn(ctx, 0, n);
    return;
  }
  const std::shared_ptr<Pool> p = pool();  // held for the job: a resize meanwhile ends it after
  if (p->size() == 1) {
    fn(ctx, 0, n);
    return;
  }
  InsideGuard inside;
  p->run(n, fn, ctx);
}
}  // namespace detail

}  // namespace ag::parallel
