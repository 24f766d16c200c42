#include "interrupts.h"

#include <chrono>

#include "train/interrupt.h"

namespace agpy {

namespace {

using Clock = std::chrono::steady_clock;

unsigned long g_main_thread = 0;  // threading.main_thread().ident: where Python runs its handlers

// The exception that asked this thread's run to stop (owned references), or null.
thread_local PyObject* t_type = nullptr;
thread_local PyObject* t_value = nullptr;
thread_local PyObject* t_traceback = nullptr;
thread_local Clock::time_point t_last_poll{};

void drop_pending() {
  Py_CLEAR(t_type);
  Py_CLEAR(t_value);
  Py_CLEAR(t_traceback);
}

// train::InterruptGuard's poll, on the run's thread with the GIL released.
bool poll_python() {
  if (t_type) return true;
  if (PyThread_get_thread_ident() != g_main_thread) return false;
  // The GIL at most every 20 ms: a run asks between steps and between sampled tokens, and
  // another Python thread holding the GIL would make each ask wait for it.
  const Clock::time_point now = Clock::now();
  if (now - t_last_poll < std::chrono::milliseconds(20)) return false;
  t_last_poll = now;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Fetch(&t_type, &t_value, &t_traceback);
  return true;
}

}  // namespace

void install_interrupt_owner() {
  g_main_thread = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  ag::train::set_interrupt_owner(&poll_python);
}

RunInterrupts::RunInterrupts() {
  drop_pending();
  t_last_poll = Clock::time_point{};  // the first ask comes at once
}

RunInterrupts::~RunInterrupts() { drop_pending(); }

void RunInterrupts::finish(bool interrupted) {
  if (!t_type) return;
  if (interrupted && PyErr_GivenExceptionMatches(t_type, PyExc_KeyboardInterrupt)) return drop_pending();
  PyErr_Restore(t_type, t_value, t_traceback);  // steals the references
  t_type = t_value = t_traceback = nullptr;
  throw nb::python_error();
}

bool stop_run_for(nb::python_error& e) {
  if (!e.matches(PyExc_KeyboardInterrupt)) return false;
  if (t_type) return true;  // the run is stopping already: one KeyboardInterrupt is raised after it
  e.restore();
  PyErr_Fetch(&t_type, &t_value, &t_traceback);
  return true;
}

}  // namespace agpy
