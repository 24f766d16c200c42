// Stopping cleanly. During a long phase (training, evaluation, sampling) an InterruptGuard is
// alive, and the first SIGINT (Ctrl-C), a SIGTERM or a SIGHUP (the terminal or the ssh
// connection went away) only sets a flag: the loop finishes its step (training writes a
// checkpoint) and stops; the command exits with status 130. A second SIGINT exits at once
// (130) without writing anything more. A SIGHUP that was ignored when the guard was made
// (nohup) stays ignored.
//
// The output going away is a stop request too: when standard output cannot be written any
// more (its reader, `| head` or `| tee`, exited: a closed pipe; or a full disk, a lost
// terminal), requested() is true from then on and the reason is said once on stderr, since
// stdout is gone.
//
// install_process_signal_handlers() (the attograd program calls it first thing) makes, for the
// whole process:
//   * SIGPIPE harmless: a write to a closed pipe fails with EPIPE instead of killing the
//     process (SIGPIPE's default) before it could write its checkpoint;
//   * SIGXFSZ ignored: a write past the file-size limit (ulimit -f) fails with EFBIG, which
//     the writer reports naming the file (base/atomic_file.h keeps the old file and removes
//     its temporary), instead of a kill with a core dump and a temporary left behind.
//
// Guards may overlap (runs on several threads of one program): the first installs the handlers,
// the last restores what was there before.
//
// Inside a program that owns the signals (the Python interpreter: python/src/interrupts.cpp),
// set_interrupt_owner(poll) is called once, and from then on no guard installs a handler: Ctrl-C
// stays the program's own (Python's KeyboardInterrupt, the interpreter alive, however many), and
// requested() asks poll() instead, on the thread the guard lives on, until it says yes once.
#pragma once

namespace ag::train {

void install_process_signal_handlers();

// poll() (called on a thread inside an InterruptGuard) returns true to ask that thread's run to
// stop as a SIGINT would. Called once, before any guard; nullptr goes back to the handlers.
using InterruptPoll = bool (*)();
void set_interrupt_owner(InterruptPoll poll);

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers (the first guard), or asks the owner's poll
  ~InterruptGuard();  // restores the previous ones (the last guard)
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // A signal asked to stop, or standard output failed.
  static bool requested();
  // Which signal asked to stop; SIGPIPE (13) when it was standard output failing; 0: none.
  static int signal_number();
  // Standard output failed; closed_pipe: because its reader exited (rather than a write error).
  static bool output_failed();
  static bool output_closed_pipe();

 private:
  bool owned_ = false;  // made under set_interrupt_owner: no handler was installed
};

}  // namespace ag::train
