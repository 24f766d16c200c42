// Boost.Stacktrace with the libbacktrace backend (Debian's libboost-stacktrace-dev): file and
// line from the DWARF line tables, read in process when an error is described.
#define BOOST_STACKTRACE_LINK
#include "autograd/anomaly.h"

#include <atomic>
#include <boost/stacktrace.hpp>
#include <filesystem>
#include <string_view>
#include <vector>

namespace ag {

namespace {
thread_local bool g_anomaly = false;
thread_local std::vector<std::string> g_anomaly_scopes;
}  // namespace

bool AnomalyMode::enabled() { return g_anomaly; }
DetectAnomalyGuard::DetectAnomalyGuard() : prev_(g_anomaly) { g_anomaly = true; }
DetectAnomalyGuard::~DetectAnomalyGuard() { g_anomaly = prev_; }
AnomalyScope::AnomalyScope(std::string_view label) : active_(g_anomaly) {
  if (active_) g_anomaly_scopes.emplace_back(label);
}
AnomalyScope::~AnomalyScope() {
  if (active_) g_anomaly_scopes.pop_back();
}

const std::string* current_anomaly_scope() { return g_anomaly_scopes.empty() ? nullptr : &g_anomaly_scopes.back(); }

namespace {
std::atomic<ForeignStackCapture> g_foreign_capture{nullptr};
constexpr int kForeignFrames = 8;
}  // namespace

void set_foreign_stack_capture(ForeignStackCapture capture) { g_foreign_capture = capture; }

struct ForwardStack {
  boost::stacktrace::stacktrace frames;
  std::string foreign;  // the front end's frames, when it has some (set_foreign_stack_capture)
};

std::shared_ptr<const ForwardStack> capture_forward_stack() {
  auto stack = std::make_shared<ForwardStack>();
  if (const ForeignStackCapture capture = g_foreign_capture.load()) stack->foreign = capture(kForeignFrames);
  return stack;
}

namespace {

std::string normal(const std::string& file) { return std::filesystem::path(file).lexically_normal().string(); }

// attograd's autograd/ folder as the debug information names it: the folder of this very file,
// read from the line tables (not __FILE__, which a compiler launcher may have made relative).
// Empty when attograd was built without line tables.
const std::string& autograd_dir() {
  static const std::string dir = [] {
    const std::string self = normal(boost::stacktrace::frame(&describe_user_frames).source_file());
    const size_t slash = self.rfind('/');
    return slash == std::string::npos ? std::string() : self.substr(0, slash + 1);
  }();
  return dir;
}

// Frames that are not the user's: attograd's autograd/ sources, and system and library headers
// (std::function's call operator, Boost's capture) compiled into them.
bool inside_library(const std::string& file) {
  return (!autograd_dir().empty() && file.starts_with(autograd_dir())) || file.starts_with("/usr/");
}

}  // namespace

std::string describe_user_frames(const ForwardStack& stack, int max_frames) {
  if (!stack.foreign.empty()) {
    std::string out;
    size_t begin = 0;
    for (int shown = 0; shown < max_frames && begin < stack.foreign.size(); ++shown) {
      const size_t end = stack.foreign.find('\n', begin);
      const size_t stop = end == std::string::npos ? stack.foreign.size() : end + 1;
      out += stack.foreign.substr(begin, stop - begin);
      begin = stop;
    }
    if (!out.ends_with('\n')) out += '\n';
    return out;
  }
  std::string out;
  int shown = 0;
  bool past_library = false;
  for (const boost::stacktrace::frame& f : stack.frames.as_vector()) {
    // A return address points after the call; one byte back lies in the call's own line.
    const boost::stacktrace::frame at(static_cast<const char*>(f.address()) - 1);
    const std::string file = normal(at.source_file());
    if (file.empty() || at.source_line() == 0) continue;
    if (!past_library && inside_library(file)) continue;
    past_library = true;
    if (inside_library(file)) continue;  // a library frame between two of the user's
    const std::string function = at.name();
    if (function.starts_with("__libc_start")) break;  // the C runtime below main
    out += "  " + file + ":" + std::to_string(at.source_line()) + " in " + function + "\n";
    if (++shown == max_frames || function == "main") break;
  }
  if (out.empty())
    out = "  (no frame outside attograd's autograd/ has line information: build the calling code with -g or -g1)\n";
  return out;
}

}  // namespace ag
