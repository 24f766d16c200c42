#include "train/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

namespace ag::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_pipe = 0;  // some write hit a closed pipe (SIGPIPE)
struct sigaction g_old_int, g_old_term, g_old_hup;
bool g_hup_installed = false;
std::atomic<bool> g_output_reported{false};

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

InterruptGuard::InterruptGuard() {
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
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  if (g_hup_installed) sigaction(SIGHUP, &g_old_hup, nullptr);
  g_signal = 0;
}

bool InterruptGuard::requested() {
  if (g_signal != 0) return true;
  if (!stdout_failed()) return false;
  report_output_failure();
  return true;
}

int InterruptGuard::signal_number() { return g_signal != 0 ? g_signal : stdout_failed() ? SIGPIPE : 0; }

bool InterruptGuard::output_failed() { return stdout_failed(); }
bool InterruptGuard::output_closed_pipe() { return stdout_failed() && g_pipe; }

}  // namespace ag::train
