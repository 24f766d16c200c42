// The profiler's core (PyTorch's RecordFunction, small): scopes that record when something
// began and ended, on which thread. Instrumented places:
//   * each op that records a node (AG_PROFILE_OP at its top: the op's true begin and end, its
//     inner ops and GEMMs nested inside; see the note at the macro). Ops composed of other ops
//     (mse_loss, var, ...) show as those ops;
//   * each backward node (autograd/engine.cpp, the loop that runs a node's backward),
//   * each GEMM (autograd/kernels/gemm.h, the one BLAS entry point; M, N, K as arguments),
//   * each pool task (autograd/parallel.cpp, a chunk of a parallel_for on whichever thread),
//   * the phases of a training step (train/), as the outermost scopes.
// Off (the default), a scope costs one predictable branch on a global flag: no clock read, no
// allocation, no call. On, each thread appends to its own buffer (no lock, no contention
// between the pool's workers); stop() hands back every thread's events. The trace writer and
// the op table live above (train/logging/profile.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ag::profiler {

enum class Category : uint8_t {
  Step,      // one training step, measured by the trainer (the reference for coverage)
  Phase,     // data, forward, backward, optimizer: the top-level scopes of a step
  Op,        // a forward op (also one called inside a backward function, as in PyTorch)
  Backward,  // a node's backward function, with the delivery of the gradients it returned
  Gemm,      // one BLAS call; args = M, N, K
  PoolTask,  // one chunk of a parallel_for; args = begin, end of its range
};
const char* category_name(Category c);  // "step", "phase", "op", "backward", "gemm", "pool task"

// One finished scope. `name` is a string with static storage (a literal, or interned).
struct Event {
  const char* name = nullptr;
  Category cat = Category::Op;
  int64_t begin_ns = 0, end_ns = 0;  // steady clock, since the session started
  int64_t args[3] = {0, 0, 0};
};

// One thread's events, in the order their scopes began (so a parent precedes its children).
struct ThreadEvents {
  int tid = 0;              // 0 for the thread that called start(), then in order of first event
  std::vector<Event> events;
};

namespace detail {
// Relaxed atomic: a plain load on x86, and no data race when a worker reads it.
extern std::atomic<bool> g_enabled;
struct ThreadBuffer;
}  // namespace detail

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// Clears every thread's buffer and turns recording on. The calling thread becomes tid 0.
void start();
// Turns recording off and on again without clearing (the time between steps is left out).
void pause();
void resume();
// Turns recording off and returns the events of every thread that recorded any (tid order).
// Call it when no scope is open on another thread (between steps, the pool idle).
std::vector<ThreadEvents> stop();
// Hands over the events recorded since start() or the last drain (tid order, threads with
// none left out) and keeps the session: threads keep their tids, times their origin. So a
// long profile goes to disk step by step in bounded memory (train/profile.h). Call it while
// paused, with no scope open (between steps).
std::vector<ThreadEvents> drain();

// A string with static storage for a name that has none (a node's op name): one copy per
// distinct name for the life of the process. Only called with profiling on.
const char* intern(const std::string& name);

// Records [construction, destruction) as one event when profiling is on.
class RecordScope {
 public:
  explicit RecordScope(const char* name, Category cat, int64_t a0 = 0, int64_t a1 = 0, int64_t a2 = 0) {
    if (!enabled()) [[likely]]
      return;
    begin(name, cat, a0, a1, a2);
  }
  // A name without static storage (a node's op): interned, only when profiling is on.
  RecordScope(const std::string& name, Category cat) {
    if (!enabled()) [[likely]]
      return;
    begin(intern(name), cat, 0, 0, 0);
  }
  ~RecordScope() {
    if (buf_) [[unlikely]]
      end();
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  void begin(const char* name, Category cat, int64_t a0, int64_t a1, int64_t a2);
  void end();
  detail::ThreadBuffer* buf_ = nullptr;  // non-null: this scope is recording
  size_t index_ = 0;
  uint64_t session_ = 0;
};

// Consecutive scopes of one category, such as a step's phases: next() ends the current scope
// and begins the next, the destructor ends the last.
class ScopeSequence {
 public:
  ScopeSequence(const char* first, Category cat) : cat_(cat) { current_.emplace(first, cat); }
  void next(const char* name) {
    current_.reset();
    current_.emplace(name, cat_);
  }

 private:
  Category cat_;
  std::optional<RecordScope> current_;
};

}  // namespace ag::profiler

// At the top of a public op: one event from the op's entry to its return, named as the node
// it records (so the trace's op names are the graph's). Why at the top and not where the op
// records its node: record() runs after the op has computed, so it knows the end but not the
// begin; an op's input checks, its output's allocation and its kernels all lie between entry
// and return. Ops an op calls (and their GEMMs) nest inside it.
#define AG_PROFILE_OP(NAME) const ::ag::profiler::RecordScope ag_profile_op_scope_(NAME, ::ag::profiler::Category::Op)
