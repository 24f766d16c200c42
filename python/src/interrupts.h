// Ctrl-C while attograd trains inside Python: the interpreter owns the signals. No run installs
// a handler of its own (train/interrupt.h's set_interrupt_owner): a SIGINT stays Python's, which
// sets its flag and, on the main thread, raises KeyboardInterrupt from Python's handler. A run
// on the main thread asks Python between steps (PyErr_CheckSignals, with the GIL taken at most
// every few tens of milliseconds); when the handler raised, the run stops as the command stops on
// a Ctrl-C (the step ends, the checkpoint is written) and Python gets the exception after. A
// second Ctrl-C meanwhile waits in Python's flag and is raised as soon as the call returns. A run
// on another thread is not interrupted (Python raises KeyboardInterrupt in the main thread only).
// A KeyboardInterrupt raised by a callback of the run (on_step, on_eval) stops it the same way.
#pragma once

#include "common.h"

namespace agpy {

// At import: attograd's runs in this process defer to Python's signal handling.
void install_interrupt_owner();

// Around one run, made and ended with the GIL held. finish() (after the run returned) raises what
// stopped it, unless it was a KeyboardInterrupt the run acted on (interrupted: the Python side
// then raises its own, naming the checkpoint).
class RunInterrupts {
 public:
  RunInterrupts();
  ~RunInterrupts();
  RunInterrupts(const RunInterrupts&) = delete;
  RunInterrupts& operator=(const RunInterrupts&) = delete;
  void finish(bool interrupted);
};

// A callback of the run raised e (GIL held): true when it is a KeyboardInterrupt, which is then
// kept to stop the run after its step as a Ctrl-C does; false for any other exception.
bool stop_run_for(nb::python_error& e);

}  // namespace agpy
