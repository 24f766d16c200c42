#include "autograd/async_signals.h"

#include <pthread.h>

#include <initializer_list>

namespace ag {

namespace {
thread_local bool t_in_scope = false;  // inside an AsyncSignalsHeld that holds them
thread_local bool t_for_life = false;  // held until the thread ends

sigset_t async_signals() {
  sigset_t s;
  sigfillset(&s);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&s, fault);
  return s;
}
}  // namespace

AsyncSignalsHeld::AsyncSignalsHeld() {
  if (async_signals_held()) return;
  const sigset_t held = async_signals();
  pthread_sigmask(SIG_BLOCK, &held, &old_);
  t_in_scope = held_here_ = true;
}

AsyncSignalsHeld::~AsyncSignalsHeld() {
  if (!held_here_) return;
  t_in_scope = false;
  if (!t_for_life) pthread_sigmask(SIG_SETMASK, &old_, nullptr);  // (held for life meanwhile: kept)
}

void hold_async_signals_for_this_thread() {
  if (t_for_life) return;
  const sigset_t held = async_signals();
  pthread_sigmask(SIG_BLOCK, &held, nullptr);
  t_for_life = true;
}

bool async_signals_held() { return t_in_scope || t_for_life; }

}  // namespace ag
