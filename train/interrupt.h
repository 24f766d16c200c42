// Ctrl-C during training: the first SIGINT (or a SIGTERM) only sets a flag, so the loop
// finishes its step, writes a checkpoint and exits cleanly; a second SIGINT exits at once
// (status 130) without writing anything.
#pragma once

namespace ag::train {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  static bool requested();
  static int signal_number();  // which signal asked to stop (0: none)
};

}  // namespace ag::train
