#include "train/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ag::train {

namespace {
volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_old_int, g_old_term;

extern "C" void on_signal(int sig) {
  if (g_signal != 0 && sig == SIGINT) {
    static const char msg[] = "\nattograd: second interrupt, stopping now without writing anything more\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(130);
  }
  g_signal = sig;
}
}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_signal = 0;
}

bool InterruptGuard::requested() { return g_signal != 0; }
int InterruptGuard::signal_number() { return g_signal; }

}  // namespace ag::train
