// Asynchronous signals (SIGINT, SIGTERM, SIGALRM, ...) held on the calling thread: one that
// arrives meanwhile waits until they are released here, or goes to a thread that does not hold
// them. Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT) stay deliverable, so a
// crash still reports itself.
//
// Why: oneDNN 2.6's JIT GEMM kernels keep data below the stack pointer, deeper than the red
// zone the ABI leaves to signal handlers, so a handler running on a thread inside one corrupts
// it (kernels/onednn.cpp). Each of its GEMMs runs inside an AsyncSignalsHeld. The pool's
// workers hold the signals for their whole life (they never need one: a process-directed signal
// goes to a thread that does not hold it, the caller's), so that there a GEMM costs no system
// call: a scope that holds them took 0.58 µs, against 2.8 µs for the attention's 64×64×32
// bf16 tile GEMM, on a Zen 4 (bench/kernels_bench.cpp, bench/README).
#pragma once

#include <signal.h>

namespace ag {

class AsyncSignalsHeld {
 public:
  AsyncSignalsHeld();   // holds them, unless this thread holds them already (then a no-op)
  ~AsyncSignalsHeld();  // releases what the constructor held
  AsyncSignalsHeld(const AsyncSignalsHeld&) = delete;
  AsyncSignalsHeld& operator=(const AsyncSignalsHeld&) = delete;

 private:
  sigset_t old_;
  bool held_here_ = false;
};

// Holds them on the calling thread until it ends (the pool's workers, as they start).
void hold_async_signals_for_this_thread();

// Whether the calling thread holds them (inside an AsyncSignalsHeld, or for its life).
bool async_signals_held();

}  // namespace ag
