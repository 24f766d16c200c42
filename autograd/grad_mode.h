// Grad mode: is the engine recording? The lowest layer of autograd (as PyTorch's
// c10/core/GradMode.h), so that the tensor's own in-place checks can ask it without reaching up
// to the engine.
#pragma once

namespace ag {

// Off inside NoGradGuard, and while backward functions run unless create_graph was asked for.
// Per thread.
struct GradMode {
  static bool enabled();
  static void set_enabled(bool on);
};

// RAII: nothing is recorded while it lives (inference must not grow memory).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// RAII: recording on again (torch.enable_grad), e.g. for a function that calls ag::grad
// while its caller holds a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// RAII: grad mode set to `on` while it lives (torch.set_grad_enabled).
class SetGradEnabledGuard {
 public:
  explicit SetGradEnabledGuard(bool on) : prev_(GradMode::enabled()) { GradMode::set_enabled(on); }
  ~SetGradEnabledGuard() { GradMode::set_enabled(prev_); }
  SetGradEnabledGuard(const SetGradEnabledGuard&) = delete;
  SetGradEnabledGuard& operator=(const SetGradEnabledGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ag
