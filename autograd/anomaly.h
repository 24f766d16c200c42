// Anomaly mode (torch.autograd.detect_anomaly): the guard, the scope labels, and the call
// stack each node keeps of its forward call, so that a NaN found in backward names the user's
// line that made the op. engine.h explains when the engine checks.
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace ag {

struct AnomalyMode {
  static bool enabled();
};

// RAII: anomaly mode on while it lives (torch.autograd.detect_anomaly).
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

// RAII: a label for the nodes recorded while it lives, shown by anomaly errors ("block 1.mlp").
// Scopes nest; the label is the innermost one. Outside anomaly mode it does nothing.
class AnomalyScope {
 public:
  explicit AnomalyScope(std::string_view label);
  ~AnomalyScope();
  AnomalyScope(const AnomalyScope&) = delete;
  AnomalyScope& operator=(const AnomalyScope&) = delete;

 private:
  bool active_;
};

// The innermost AnomalyScope label on this thread, or null.
const std::string* current_anomaly_scope();

// The call stack of a forward call: return addresses only (cheap to take), symbolised when an
// error describes it. Taken by record() inside DetectAnomalyGuard, never outside.
struct ForwardStack;
std::shared_ptr<const ForwardStack> capture_forward_stack();

// The first `max_frames` frames of the stack outside attograd's own autograd/ sources, innermost
// first, one "  FILE:LINE in FUNCTION" line each: the user's code that called the op, and its
// callers up to main. Frames without line information (a library built without -g) are passed
// over; when none is left the text says so. When a foreign capture (below) returned frames, those
// are the user's code, and they are shown instead.
std::string describe_user_frames(const ForwardStack& stack, int max_frames = 4);

// A front end in another language (the Python package) names its own user's line: `capture`
// runs wherever a forward stack is taken (in anomaly mode only, on the thread recording the op)
// and returns that language's frames, innermost first, one "  FILE:LINE in FUNCTION" line each,
// or "" when none of its code is running. The C++ frames under it would be the binding's own.
using ForeignStackCapture = std::string (*)(int max_frames);
void set_foreign_stack_capture(ForeignStackCapture capture);

}  // namespace ag
