#include "autograd/profiler.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace ag::profiler {

namespace detail {
std::atomic<bool> g_enabled{false};

// A thread's events. Owned by the registry (a thread that exits leaves its events to be read).
struct ThreadBuffer {
  uint64_t session = 0;  // the session whose events `events` holds
  int tid = 0;
  std::vector<Event> events;
};
}  // namespace detail

namespace {
using detail::ThreadBuffer;
using Clock = std::chrono::steady_clock;

std::mutex g_mu;  // the registry, the session's tid counter, the interned names
std::vector<std::unique_ptr<ThreadBuffer>> g_buffers;
std::atomic<uint64_t> g_session{0};
int g_next_tid = 0;
Clock::time_point g_origin;
thread_local ThreadBuffer* t_buffer = nullptr;

// A buffer for this thread in the current session: the first event of a thread in a session
// takes the lock once, the others none.
ThreadBuffer* this_thread_buffer() {
  ThreadBuffer* b = t_buffer;
  const uint64_t session = g_session.load(std::memory_order_acquire);
  if (b && b->session == session) return b;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!b) {
    g_buffers.push_back(std::make_unique<ThreadBuffer>());
    b = t_buffer = g_buffers.back().get();
  }
  b->session = session;
  b->tid = g_next_tid++;
  b->events.clear();
  b->events.reserve(1 << 14);  // no reallocation in the first thousands of events
  return b;
}

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - g_origin).count(); }
}  // namespace

const char* category_name(Category c) {
  switch (c) {
    case Category::Step: return "step";
    case Category::Phase: return "phase";
    case Category::Op: return "op";
    case Category::Backward: return "backward";
    case Category::Gemm: return "gemm";
    case Category::PoolTask: return "pool task";
  }
  return "?";
}

void start() {
  detail::g_enabled.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& b : g_buffers) b->events.clear();
    g_next_tid = 0;
    g_origin = Clock::now();
    g_session.fetch_add(1, std::memory_order_release);
  }
  this_thread_buffer();  // tid 0: the thread that profiles
  detail::g_enabled.store(true, std::memory_order_relaxed);
}

void pause() { detail::g_enabled.store(false, std::memory_order_relaxed); }
void resume() { detail::g_enabled.store(true, std::memory_order_relaxed); }

std::vector<ThreadEvents> stop() {
  detail::g_enabled.store(false, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_mu);
  const uint64_t session = g_session.load(std::memory_order_acquire);
  std::vector<ThreadEvents> out;
  for (auto& b : g_buffers) {
    if (b->session != session) continue;
    out.push_back({b->tid, std::move(b->events)});
    b->events = {};
  }
  std::sort(out.begin(), out.end(), [](const ThreadEvents& a, const ThreadEvents& b) { return a.tid < b.tid; });
  return out;
}

std::vector<ThreadEvents> drain() {
  std::lock_guard<std::mutex> lock(g_mu);
  const uint64_t session = g_session.load(std::memory_order_acquire);
  std::vector<ThreadEvents> out;
  for (auto& b : g_buffers) {
    if (b->session != session || b->events.empty()) continue;
    out.push_back({b->tid, std::move(b->events)});
    b->events = {};
    b->events.reserve(1 << 14);
  }
  std::sort(out.begin(), out.end(), [](const ThreadEvents& a, const ThreadEvents& b) { return a.tid < b.tid; });
  return out;
}

const char* intern(const std::string& name) {
  static std::unordered_set<std::string> names;  // node-based: c_str() stays valid
  std::lock_guard<std::mutex> lock(g_mu);
  return names.insert(name).first->c_str();
}

void RecordScope::begin(const char* name, Category cat, int64_t a0, int64_t a1, int64_t a2) {
  buf_ = this_thread_buffer();
  index_ = buf_->events.size();
  Event e;
  e.name = name;
  e.cat = cat;
  e.args[0] = a0;
  e.args[1] = a1;
  e.args[2] = a2;
  e.begin_ns = e.end_ns = now_ns();
  buf_->events.push_back(e);
  session_ = buf_->session;
}

void RecordScope::end() {
  // A scope still open when its session was stopped and a new one started ends nowhere.
  if (buf_->session == session_ && index_ < buf_->events.size()) buf_->events[index_].end_ns = now_ns();
}

}  // namespace ag::profiler
