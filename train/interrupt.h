// Ctrl-C during a long phase (training, evaluation, sampling): the first SIGINT (or a SIGTERM)
// only sets a flag, so the loop finishes its step (training writes a checkpoint) and stops
// cleanly; a second SIGINT exits at once (status 130) without writing anything more.
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
