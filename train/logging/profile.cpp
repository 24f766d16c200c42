#include "train/logging/profile.h"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <set>
#include <stdexcept>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/memory_limit.h"
#include "train/config/config_error.h"

namespace ag::train {

using profiler::Category;
using profiler::Event;
using profiler::ThreadEvents;

namespace {

double gflop_of(const Event& e) {
  return e.cat == Category::Gemm ? 2.0 * static_cast<double>(e.args[0]) * static_cast<double>(e.args[1]) *
                                       static_cast<double>(e.args[2]) / 1e9
                                 : 0.0;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
int64_t dur(const Event& e) { return e.end_ns - e.begin_ns; }

bool contains(const Event& outer, const Event& inner) {
  return outer.begin_ns <= inner.begin_ns && inner.end_ns <= outer.end_ns;
}

// Each event's parent on its thread (-1 at the top). Events are in the order their scopes
// began, so a parent comes before its children; an open scope contains the next event or
// has ended before it.
std::vector<int64_t> parents_of(const std::vector<Event>& ev) {
  std::vector<int64_t> parent(ev.size(), -1), stack;
  for (size_t i = 0; i < ev.size(); ++i) {
    while (!stack.empty() && !contains(ev[static_cast<size_t>(stack.back())], ev[i])) stack.pop_back();
    parent[i] = stack.empty() ? -1 : stack.back();
    stack.push_back(static_cast<int64_t>(i));
  }
  return parent;
}

bool op_level(Category c) { return c == Category::Op || c == Category::Backward; }

// Where an op-level event's time goes in the table: the outermost backward node above it (an
// op a backward function calls is part of that node's backward), else the event itself.
struct Owner {
  int64_t index = -1;
  bool backward = false;
};

struct ThreadView {
  const ThreadEvents* t = nullptr;
  std::vector<int64_t> parent;
  std::vector<Owner> owner;  // for op-level events and below; index -1 when none
};

ThreadView view_of(const ThreadEvents& t) {
  ThreadView v;
  v.t = &t;
  v.parent = parents_of(t.events);
  v.owner.resize(t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    const int64_t p = v.parent[i];
    const Owner up = p >= 0 ? v.owner[static_cast<size_t>(p)] : Owner{};
    if (up.backward) v.owner[i] = up;  // inside a node's backward, whatever it is
    else if (e.cat == Category::Backward) v.owner[i] = {static_cast<int64_t>(i), true};
    else if (e.cat == Category::Op) v.owner[i] = {static_cast<int64_t>(i), false};
    else v.owner[i] = up;
  }
  return v;
}

// The owner on the main thread of what ran at time t on another thread (a pool task's GEMM
// runs inside the op that started the parallel_for): the innermost event open at t.
Owner owner_at(const ThreadView& main, int64_t t) {
  const auto& ev = main.t->events;
  // the last event that began at or before t, then up its parents to one still open at t
  auto it = std::upper_bound(ev.begin(), ev.end(), t, [](int64_t x, const Event& e) { return x < e.begin_ns; });
  int64_t i = static_cast<int64_t>(it - ev.begin()) - 1;
  while (i >= 0 && ev[static_cast<size_t>(i)].end_ns < t) i = main.parent[static_cast<size_t>(i)];
  return i >= 0 ? main.owner[static_cast<size_t>(i)] : Owner{};
}

// One complete ("X") event of the trace.
nlohmann::json event_json(const Event& e, int tid) {
  nlohmann::json j = {{"name", e.name},
                      {"cat", profiler::category_name(e.cat)},
                      {"ph", "X"},
                      {"ts", static_cast<double>(e.begin_ns) / 1e3},
                      {"dur", static_cast<double>(dur(e)) / 1e3},
                      {"pid", 1},
                      {"tid", tid}};
  if (e.cat == Category::Gemm)
    j["args"] = {{"M", e.args[0]}, {"N", e.args[1]}, {"K", e.args[2]}, {"GFLOP", gflop_of(e)}};
  else if (e.cat == Category::PoolTask)
    j["args"] = {{"begin", e.args[0]}, {"end", e.args[1]}};
  else if (e.cat == Category::Step)
    j["args"] = {{"iter", e.args[0]}};
  return j;
}

// A thread's two metadata events: its name and its place in the viewer.
std::string thread_metadata(int tid) {
  const std::string name = tid == 0 ? "main (the training step)" : "thread " + std::to_string(tid);
  return nlohmann::json({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}}).dump() +
         ",\n" +
         nlohmann::json({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"sort_index", tid}}}})
             .dump();
}

}  // namespace

std::string chrome_trace_json(const std::vector<ThreadEvents>& threads, const std::string& title) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", title}}}});
  for (const ThreadEvents& t : threads) {
    const std::string name = t.tid == 0 ? "main (the training step)" : "thread " + std::to_string(t.tid);
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t.tid}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", t.tid}, {"args", {{"sort_index", t.tid}}}});
  }
  for (const ThreadEvents& t : threads)
    for (const Event& e : t.events) events.push_back(event_json(e, t.tid));
  const nlohmann::json trace = {{"traceEvents", std::move(events)},
                                {"displayTimeUnit", "ms"},
                                {"otherData", {{"producer", "attograd"}, {"title", title}}}};
  return trace.dump() + "\n";
}

ProfileSummary summarize(const std::vector<ThreadEvents>& threads) {
  ProfileSummary s;
  std::vector<ThreadView> views;
  for (const ThreadEvents& t : threads) views.push_back(view_of(t));
  const ThreadView* main = nullptr;
  for (const ThreadView& v : views)
    if (v.t->tid == 0) main = &v;
  std::map<std::string, OpStats> rows;
  auto row = [&](const char* name) -> OpStats& {
    OpStats& r = rows[name];
    r.name = name;
    return r;
  };
  for (const ThreadView& v : views) {
    const auto& ev = v.t->events;
    if (!ev.empty()) ++s.threads;
    // direct op-level children's time, for self times
    std::vector<int64_t> child_ns(ev.size(), 0);
    for (size_t i = 0; i < ev.size(); ++i)
      if (op_level(ev[i].cat) && v.parent[i] >= 0) child_ns[static_cast<size_t>(v.parent[i])] += dur(ev[i]);
    for (size_t i = 0; i < ev.size(); ++i) {
      const Event& e = ev[i];
      const int64_t p = v.parent[i];
      switch (e.cat) {
        case Category::Step:
          ++s.steps;
          s.step_ms += ms(dur(e));
          break;
        case Category::Phase: {
          auto it = std::find_if(s.phases_ms.begin(), s.phases_ms.end(), [&](const auto& ph) { return ph.first == e.name; });
          if (it == s.phases_ms.end()) it = s.phases_ms.insert(s.phases_ms.end(), {e.name, 0.0});
          it->second += ms(dur(e));
          if (p >= 0 && ev[static_cast<size_t>(p)].cat == Category::Step) s.covered_ms += ms(dur(e));
          break;
        }
        case Category::Op:
        case Category::Backward: {
          const Owner& o = v.owner[i];
          if (o.index != static_cast<int64_t>(i)) break;  // an op inside a node's backward: that node's time
          OpStats& r = row(e.name);
          // self: less the op-level events directly inside (a backward's own ops are its self time)
          const double self = ms(dur(e) - (o.backward ? 0 : child_ns[i]));
          if (o.backward) ++r.bwd_calls, r.bwd_total_ms += ms(dur(e)), r.bwd_self_ms += self;
          else ++r.fwd_calls, r.fwd_total_ms += ms(dur(e)), r.fwd_self_ms += self;
          break;
        }
        case Category::Gemm: {
          ++s.gemm_calls;
          s.gemm_gflop += gflop_of(e);
          s.gemm_ms += ms(dur(e));
          Owner o = v.owner[i];
          const ThreadView* where = &v;
          if (o.index < 0 && main && &v != main) o = owner_at(*main, e.begin_ns), where = main;
          if (o.index < 0) break;
          OpStats& r = row(where->t->events[static_cast<size_t>(o.index)].name);
          (o.backward ? r.bwd_gemm_gflop : r.fwd_gemm_gflop) += gflop_of(e);
          break;
        }
        case Category::PoolTask:
          ++s.pool_tasks;
          s.pool_task_ms += ms(dur(e));
          break;
      }
    }
  }
  for (auto& [name, r] : rows) s.ops.push_back(r);
  std::stable_sort(s.ops.begin(), s.ops.end(), [](const OpStats& a, const OpStats& b) {
    return a.fwd_self_ms + a.bwd_self_ms > b.fwd_self_ms + b.bwd_self_ms;
  });
  return s;
}

std::string format_profile_table(const ProfileSummary& s, const std::string& title) {
  std::string out;
  char line[512];
  auto pct = [&](double v) { return s.step_ms > 0 ? 100.0 * v / s.step_ms : 0.0; };
  std::snprintf(line, sizeof line, "profile of %s: %ld steps, %.2f ms per step\n", title.c_str(),
                static_cast<long>(s.steps), s.steps ? s.step_ms / static_cast<double>(s.steps) : 0.0);
  out += line;
  out += "Fwd: the op's own calls (an op called inside a backward function counts in that node's Bwd); Bwd: its\n"
         "node's backward with the gradients it delivered. Self = total less the ops and nodes inside. Times summed\n"
         "over the steps; % = self (Fwd + Bwd) of the step time; GFLOP/s = the GEMMs run inside / the total time.\n\n";
  std::snprintf(line, sizeof line, "%-30s %9s %12s %11s %9s %12s %11s %7s %11s %11s\n", "Name", "Fwd calls", "Fwd total ms",
                "Fwd self ms", "Bwd calls", "Bwd total ms", "Bwd self ms", "% step", "Fwd GFLOP/s", "Bwd GFLOP/s");
  out += line;
  out += std::string(std::strlen(line) - 1, '-') + "\n";
  auto rate = [](double gflop, double total_ms) -> std::string {
    if (gflop <= 0 || total_ms <= 0) return "";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", gflop / (total_ms / 1e3));
    return b;
  };
  double self_sum = 0;
  for (const OpStats& r : s.ops) {
    const double self = r.fwd_self_ms + r.bwd_self_ms;
    self_sum += self;
    std::snprintf(line, sizeof line, "%-30s %9ld %12.3f %11.3f %9ld %12.3f %11.3f %6.1f%% %11s %11s\n", r.name.c_str(),
                  static_cast<long>(r.fwd_calls), r.fwd_total_ms, r.fwd_self_ms, static_cast<long>(r.bwd_calls),
                  r.bwd_total_ms, r.bwd_self_ms, pct(self), rate(r.fwd_gemm_gflop, r.fwd_total_ms).c_str(),
                  rate(r.bwd_gemm_gflop, r.bwd_total_ms).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%-30s %9s %12s %11.3f %9s %12s %11s %6.1f%%\n", "(outside ops and nodes)", "", "",
                s.step_ms - self_sum, "", "", "", pct(s.step_ms - self_sum));
  out += line;
  out += "\nphases:";
  for (const auto& [name, t] : s.phases_ms) {
    std::snprintf(line, sizeof line, " %s %.3f ms (%.1f%%),", name.c_str(), t, pct(t));
    out += line;
  }
  std::snprintf(line, sizeof line, " together %.1f%% of the step time\n", pct(s.covered_ms));
  out += line;
  std::snprintf(line, sizeof line,
                "GEMMs: %ld calls, %.3f GFLOP, %.3f ms on all threads (%.1f GFLOP/s per thread busy)\n"
                "pool tasks: %ld, %.3f ms on all threads; %d threads recorded events\n",
                static_cast<long>(s.gemm_calls), s.gemm_gflop, s.gemm_ms, s.gemm_ms > 0 ? s.gemm_gflop / (s.gemm_ms / 1e3) : 0.0,
                static_cast<long>(s.pool_tasks), s.pool_task_ms, s.threads);
  out += line;
  return out;
}

void add_to_summary(ProfileSummary& sum, const ProfileSummary& part) {
  sum.steps += part.steps;
  sum.step_ms += part.step_ms;
  for (const auto& phase : part.phases_ms) {  // not a structured binding: clang 14 will not capture one
    auto it = std::find_if(sum.phases_ms.begin(), sum.phases_ms.end(), [&](const auto& ph) { return ph.first == phase.first; });
    if (it == sum.phases_ms.end()) sum.phases_ms.push_back(phase);
    else it->second += phase.second;
  }
  sum.covered_ms += part.covered_ms;
  for (const OpStats& r : part.ops) {
    auto it = std::find_if(sum.ops.begin(), sum.ops.end(), [&](const OpStats& o) { return o.name == r.name; });
    if (it == sum.ops.end()) {
      sum.ops.push_back(r);
      continue;
    }
    it->fwd_calls += r.fwd_calls, it->bwd_calls += r.bwd_calls;
    it->fwd_total_ms += r.fwd_total_ms, it->fwd_self_ms += r.fwd_self_ms;
    it->bwd_total_ms += r.bwd_total_ms, it->bwd_self_ms += r.bwd_self_ms;
    it->fwd_gemm_gflop += r.fwd_gemm_gflop, it->bwd_gemm_gflop += r.bwd_gemm_gflop;
  }
  std::stable_sort(sum.ops.begin(), sum.ops.end(), [](const OpStats& a, const OpStats& b) {
    return a.fwd_self_ms + a.bwd_self_ms > b.fwd_self_ms + b.bwd_self_ms;
  });
  sum.gemm_calls += part.gemm_calls;
  sum.gemm_gflop += part.gemm_gflop, sum.gemm_ms += part.gemm_ms;
  sum.pool_tasks += part.pool_tasks;
  sum.pool_task_ms += part.pool_task_ms;
  sum.threads = std::max(sum.threads, part.threads);
}

// The trace file as it is written: DIR/trace.json.tmp, renamed to DIR/trace.json once complete.
// Every write is checked; a failure throws std::runtime_error naming the file and the reason.
struct ProfileSession::Trace {
  std::string path, tmp;
  std::FILE* f = nullptr;
  bool first = true;
  std::set<int> tids;

  Trace(std::string final_path, const std::string& title) : path(std::move(final_path)), tmp(path + ".tmp") {
    f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("cannot create " + tmp);
    try {
      const nlohmann::json process = {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", title}}}};
      put("{\"traceEvents\":[\n");
      item(process.dump());
    } catch (...) {  // no destructor runs for a constructor that throws
      std::fclose(f);
      std::remove(tmp.c_str());
      throw;
    }
  }
  ~Trace() {
    if (f) std::fclose(f);
    if (!tmp.empty()) std::remove(tmp.c_str());  // not completed: no partial trace is left
  }
  [[noreturn]] void fail(const std::string& what) const {
    const int err = errno;
    throw std::runtime_error(what + ": " + (err == EFBIG ? std::string("File too large (the file-size limit, ulimit -f)")
                                                         : std::strerror(err ? err : EIO)));
  }
  void put(const std::string& s) {
    errno = 0;
    if (std::fwrite(s.data(), 1, s.size(), f) != s.size() || std::ferror(f)) fail("write to " + tmp + " failed");
  }
  void item(const std::string& json) {
    put((first ? "" : ",\n") + json);
    first = false;
  }
  void events(const std::vector<ThreadEvents>& threads) {
    for (const ThreadEvents& t : threads) {
      if (tids.insert(t.tid).second) item(thread_metadata(t.tid));
      for (const Event& e : t.events) item(event_json(e, t.tid).dump());
    }
    errno = 0;
    if (std::fflush(f) != 0) fail("write to " + tmp + " failed");  // a full disk shows now, not at the end
  }
  void complete(const std::string& title) {
    const nlohmann::json other = {{"producer", "attograd"}, {"title", title}};
    put("\n],\"displayTimeUnit\":\"ms\",\"otherData\":" + other.dump() + "}\n");
    errno = 0;
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) fail("write to " + tmp + " failed");
    const int rc = std::fclose(f);
    f = nullptr;
    if (rc != 0) fail("write to " + tmp + " failed");
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename " + tmp + " to " + path);
    tmp.clear();
  }
};

ProfileSession::ProfileSession(int64_t steps, std::string dir, std::string title)
    : steps_(steps), dir_(std::move(dir)), title_(std::move(title)) {}

ProfileSession::~ProfileSession() {
  if (recording_) (void)profiler::stop();  // a step threw: leave the profiler off
}

void ProfileSession::require_fits(int64_t steps, const std::string& dir) {
  if (steps <= 0) return;
  const int64_t need = steps > std::numeric_limits<int64_t>::max() / kMinTraceBytesPerStep
                           ? std::numeric_limits<int64_t>::max()
                           : steps * kMinTraceBytesPerStep;
  auto refuse = [&](const std::string& room) {
    throw ConfigError("train: --profile-steps " + std::to_string(steps) + ": its trace needs at least " + human_bytes(need) +
                      " (" + std::to_string(kMinTraceBytesPerStep) + " bytes a step at the least), more than " + room +
                      "; lower --profile-steps");
  };
  rlimit fsize{};
  if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
      static_cast<uint64_t>(need) > static_cast<uint64_t>(fsize.rlim_cur))
    refuse("the file-size limit (ulimit -f) of " + human_bytes(static_cast<int64_t>(fsize.rlim_cur)));
  // The free space where the trace will be: the folder, or the nearest parent that exists.
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  while (!p.empty() && !std::filesystem::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  struct statvfs vfs {};
  if (::statvfs(p.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (static_cast<uint64_t>(need) > free_bytes)
      refuse("the " + human_bytes(static_cast<int64_t>(std::min<uint64_t>(free_bytes, INT64_MAX))) +
             " free on the filesystem of " + dir);
  }
}

void ProfileSession::begin_step(int64_t iter) {
  if (steps_ <= 0 || done_) return;
  if (seen_++ == 0) return;  // the warm-up step
  if (!recording_) profiler::start(), recording_ = true;
  else profiler::resume();
  step_.emplace("step", Category::Step, iter);
}

void ProfileSession::append(const std::vector<ThreadEvents>& threads) {
  if (!trace_) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);  // (bench's --profile DIR may be new; a failure shows in the write)
    trace_ = std::make_unique<Trace>((std::filesystem::path(dir_) / "trace.json").string(), title_);
  }
  trace_->events(threads);
  add_to_summary(sums_, summarize(threads));
}

void ProfileSession::give_up(std::ostream& out, const std::string& why) {
  if (recording_) (void)profiler::stop(), recording_ = false;
  trace_.reset();  // removes the unfinished temporary file
  done_ = true;
  out << "profile: " << why << "; profiling stopped after " << profiled_ << " of " << steps_
      << " profiled steps (the run goes on)\n";
  out.flush();
}

void ProfileSession::end_step(std::ostream& out) {
  if (!step_) return;
  step_.reset();
  profiler::pause();
  ++profiled_;
  try {
    append(profiler::drain());
  } catch (const std::exception& e) {
    give_up(out, e.what());
    return;
  }
  if (profiled_ == steps_) complete(out);
}

void ProfileSession::finish(std::ostream& out) {
  if (steps_ <= 0 || done_) return;
  if (step_) {  // the run ended inside a profiled step: its events join the others'
    step_.reset();
    profiler::pause();
    std::vector<ThreadEvents> partial = profiler::drain();
    try {
      if (profiled_ > 0) append(partial);
    } catch (const std::exception& e) {
      give_up(out, e.what());
      return;
    }
  }
  out << "profile: the run ended after " << profiled_ << " of the " << steps_
      << " profiled steps (the first step is a warm-up, not profiled)\n";
  if (profiled_ > 0) complete(out);
  else if (recording_) (void)profiler::stop(), recording_ = false;
  done_ = true;
}

void ProfileSession::complete(std::ostream& out) {
  (void)profiler::stop();
  recording_ = false;
  const std::filesystem::path dir(dir_);
  try {
    if (!trace_) append({});
    trace_->complete(title_);
    trace_.reset();
    const std::string table = format_profile_table(sums_, title_);
    write_file_atomically((dir / "profile_table.txt").string(), table);
    done_ = true;
    out << table << "trace: " << (dir / "trace.json").string()
        << " (open it in https://ui.perfetto.dev or chrome://tracing); this table: " << (dir / "profile_table.txt").string()
        << "\n";
    out.flush();
  } catch (const std::exception& e) {
    give_up(out, e.what());
  }
}

}  // namespace ag::train
