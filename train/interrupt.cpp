#include "train/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>

namespace ag::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_pipe = 0;  // some write hit a closed pipe (SIGPIPE)
struct sigaction g_old_int, g_old_term, g_old_hup;
bool g_hup_installed = false;
std::atomic<bool> g_output_reported{false};
std::mutex g_guards_mu;   // guards and their count: the first installs, the last restores
int g_guards = 0;
std::atomic<InterruptPoll> g_owner_poll{nullptr};
thread_local int t_owned_guards = 0;       // owned guards alive on this thread
thread_local bool t_owner_stop = false;    // this thread's poll said stop (sticky until its guards end)

extern "C" void on_signal(int sig) {
  if (g_signal != 0 && sig == SIGINT) {
    static const char msg[] = "\nattograd: second interrupt, stopping now without writing anything more\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(130);
  }
  g_signal = sig;
}

extern "C" void on_sigpipe(int) { g_pipe = 1; }

// std::cout is where every command writes its output; once a write to it failed, the stream
// stays failed and writes nothing more.
bool stdout_failed() { return std::cout.fail(); }

void report_output_failure() {
  if (g_output_reported.exchange(true)) return;
  std::fprintf(stderr, "attograd: %s; stopping (a training run writes its checkpoint first)\n",
               g_pipe ? "standard output is a closed pipe (its reader exited)"
                      : "standard output cannot be written any more (a full disk, or the terminal is gone)");
  std::fflush(stderr);
}
}  // namespace

void install_process_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_sigpipe;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPIPE, &sa, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

void set_interrupt_owner(InterruptPoll poll) { g_owner_poll = poll; }

InterruptGuard::InterruptGuard() {
  if (g_owner_poll.load()) {
    owned_ = true;
    if (t_owned_guards++ == 0) t_owner_stop = false;
    return;
  }
  std::lock_guard<std::mutex> lock(g_guards_mu);
  if (g_guards++ > 0) return;  // another thread's guard installed them
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  struct sigaction hup {};
  sigaction(SIGHUP, nullptr, &hup);
  g_hup_installed = hup.sa_handler != SIG_IGN;  // nohup: the user asked to survive a hangup
  if (g_hup_installed) sigaction(SIGHUP, &sa, &g_old_hup);
}

InterruptGuard::~InterruptGuard() {
  if (owned_) {
    if (--t_owned_guards == 0) t_owner_stop = false;
    return;
  }
  std::lock_guard<std::mutex> lock(g_guards_mu);
  if (--g_guards > 0) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  if (g_hup_installed) sigaction(SIGHUP, &g_old_hup, nullptr);
  g_signal = 0;
}

bool InterruptGuard::requested() {
  if (g_signal != 0) return true;
  if (t_owned_guards > 0) {
    if (!t_owner_stop) {
      const InterruptPoll poll = g_owner_poll.load();
      t_owner_stop = poll && poll();
    }
    if (t_owner_stop) return true;
  }
  if (!stdout_failed()) return false;
  report_output_failure();
  return true;
}

int InterruptGuard::signal_number() {
  if (g_signal != 0) return g_signal;
  if (t_owned_guards > 0 && t_owner_stop) return SIGINT;  // the owner's interrupt (Python's KeyboardInterrupt)
  return stdout_failed() ? SIGPIPE : 0;
}

bool InterruptGuard::output_failed() { return stdout_failed(); }
bool InterruptGuard::output_closed_pipe() { return stdout_failed() && g_pipe; }

}  // namespace ag::train
