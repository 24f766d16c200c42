#include "autograd/async_signals.h"

#include <pthread.h>

#include <initializer_list>

namespace ag {

namespace {
thread_local bool t_held = false;  // this thread holds them (a scope of its, or for life)

sigset_t async_signals() {
  sigset_t s;
  sigfillset(&s);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&s, fault);
  return s;
}
}  // namespace

AsyncSignalsHeld::AsyncSignalsHeld() {
  if (t_held) return;
  const sigset_t held = async_signals();
  pthread_sigmask(SIG_BLOCK, &held, &old_);
  t_held = held_here_ = true;
}

AsyncSignalsHeld::~AsyncSignalsHeld() {
  if (!held_here_) return;
  t_held = false;
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void hold_async_signals_for_this_thread() {
  if (t_held) return;
  const sigset_t held = async_signals();
  pthread_sigmask(SIG_BLOCK, &held, nullptr);
  t_held = true;
}

bool async_signals_held() { return t_held; }

}  // namespace ag
