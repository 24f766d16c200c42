// What the profiler (autograd/profiler.h) recorded, for people: a trace in the Chrome Trace
// Event format (trace.json: open it in https://ui.perfetto.dev or chrome://tracing) and a table
// like torch.profiler's key_averages() (profile_table.txt). `attograd train --profile-steps N`
// and `attograd bench train --profile` write them (docs/studying.md says how to read them).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autograd/profiler.h"

namespace ag::train {

// The trace as JSON text: one "X" (complete) event per scope, ts and dur in µs since the
// profile began, pid 1, tid the profiler's thread number (0: the thread that ran the steps),
// the category in "cat", a GEMM's M, N, K and GFLOP in "args"; thread names as "M" events.
std::string chrome_trace_json(const std::vector<profiler::ThreadEvents>& threads, const std::string& title);

// One line of the op table: an op's forward calls (the op's own events, outside any backward)
// and its node's backward calls, with total time (the events' durations) and self time (less
// the op and backward events nested directly inside), and the GEMMs that ran in them.
struct OpStats {
  std::string name;
  int64_t fwd_calls = 0, bwd_calls = 0;
  double fwd_total_ms = 0, fwd_self_ms = 0, bwd_total_ms = 0, bwd_self_ms = 0;
  double fwd_gemm_gflop = 0, bwd_gemm_gflop = 0;
};

struct ProfileSummary {
  int64_t steps = 0;
  double step_ms = 0;                                      // the steps' total
  std::vector<std::pair<std::string, double>> phases_ms;   // data, forward, backward, optimizer (first seen first)
  double covered_ms = 0;                                   // by the phases, inside the steps
  std::vector<OpStats> ops;                                // by self time (forward + backward), largest first
  int64_t gemm_calls = 0;
  double gemm_gflop = 0, gemm_ms = 0;                      // gemm_ms summed over threads
  int64_t pool_tasks = 0;
  double pool_task_ms = 0;                                 // summed over threads
  int threads = 0;                                         // that recorded events
};

ProfileSummary summarize(const std::vector<profiler::ThreadEvents>& threads);

// The table as text: one line per op, then the phases and the GEMM and pool totals.
std::string format_profile_table(const ProfileSummary& s, const std::string& title);

// A training loop's profile: call begin_step() and end_step() around each step. The first step
// is a warm-up (buffers are allocated, caches filled) and is not recorded; the next `steps`
// steps are. Each profiled step's events go to DIR/trace.json as soon as it ends (a temporary
// file, renamed into place when the trace is complete), and into the table's running sums, so
// memory stays that of one step however many are profiled. After the last of them it writes
// DIR/profile_table.txt and prints the table to `out`. Between steps the profiler is paused, so
// evaluations and logging stay out of the trace. A write that fails (a full disk, ulimit -f)
// ends the profile with a message on `out`, never the run. steps = 0: does nothing.
class ProfileSession {
 public:
  ProfileSession(int64_t steps, std::string dir, std::string title);
  ~ProfileSession();
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;

  // Refuses (ConfigError naming --profile-steps) a count whose trace cannot fit even at its
  // smallest, kMinTraceBytesPerStep a step, in the file-size limit (ulimit -f) or the space
  // free on DIR's filesystem: before the first step, not after hours of training.
  static void require_fits(int64_t steps, const std::string& dir);
  // A profiled step writes at least its step event and its four phases (about 90 bytes each).
  static constexpr int64_t kMinTraceBytesPerStep = 400;

  void begin_step(int64_t iter);
  void end_step(std::ostream& out);
  // The run ended before the last profiled step: writes what was recorded (if any) and says so.
  void finish(std::ostream& out);
  bool done() const { return done_; }

 private:
  void append(const std::vector<profiler::ThreadEvents>& threads);  // to the trace and the sums
  void complete(std::ostream& out);                                  // the trace's end, the table
  void give_up(std::ostream& out, const std::string& why);           // a failed write: profiling ends
  int64_t steps_;
  std::string dir_, title_;
  int64_t seen_ = 0, profiled_ = 0;
  bool recording_ = false, done_ = false;
  std::optional<profiler::RecordScope> step_;
  struct Trace;                   // the trace file being written
  std::unique_ptr<Trace> trace_;
  std::string failure_;           // a write that failed where there was no stream to say it
  ProfileSummary sums_;           // the steps so far, added up
};

// Adds one part of a profile (summarize of some steps' events) to the sums of the others.
void add_to_summary(ProfileSummary& sum, const ProfileSummary& part);

}  // namespace ag::train
