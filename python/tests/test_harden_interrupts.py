"""Hardening, class 6: Ctrl-C while attograd trains inside Python. The interpreter owns the
signals (python/src/interrupts.h): a run installs no handler of its own, asks Python between
steps, and stops as the command stops on a Ctrl-C (the step ends, the checkpoint is written),
after which Python raises KeyboardInterrupt: the interpreter alive and the run resumable, however
many Ctrl-Cs came. Before, a second SIGINT during a run exited the interpreter (status 130), and
two overlapping runs from threads left the run's handler installed, so that later Ctrl-Cs raised
nothing and the next one killed the process. Each case runs in its own process."""

import os
import signal
import subprocess
import sys

from isolated import returns

TEXT = "the quick brown fox jumps over the lazy dog.\nto be or not to be.\n" * 40
SMALL = "layers=1, heads=2, embd=16, block=16, batch=4, eval_iters=1, sample_tokens=0, quiet=True"


def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return str(path)


def test_two_ctrl_c_during_a_callback_raise_keyboard_interrupt_and_the_run_resumes(tmp_path):
    # Both signals are sent while the run is inside its on_step callback: with the run's own
    # handler installed (before), the second one exited the process at once.
    out = returns(f"""
        import os, signal
        from attograd import training
        run = {str(tmp_path / 'run')!r}

        def on_step(step):
            if step["iter"] == 2:
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)

        try:
            training.train(data={corpus(tmp_path)!r}, out=run, iters=10**6, eval_every=10**6, on_step=on_step, {SMALL})
        except KeyboardInterrupt as e:
            print("KeyboardInterrupt:", "the run stopped after iter 2" in str(e), "resume" in str(e))
        print(os.path.exists(os.path.join(run, "train_state.safetensors")))
        try:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the run: Python's, as ever
            for _ in range(1000):
                pass
        except KeyboardInterrupt:
            print("later Ctrl-C: KeyboardInterrupt")
        print(training.resume(run, iters=4, quiet=True)["iters"])
    """)
    assert out.splitlines() == ["KeyboardInterrupt: True True", "True", "later Ctrl-C: KeyboardInterrupt", "4"]


def test_ctrl_c_twice_from_outside_leaves_the_interpreter_alive(tmp_path):
    # Two SIGINTs from another process while the run steps. Python's handler counts them (the
    # first raises); the run stops at the first and writes its checkpoint.
    code = f"""
import os, signal, sys
import attograd
from attograd import training
seen = []
def handler(signum, frame):
    seen.append(signum)
    if len(seen) == 1:
        raise KeyboardInterrupt("first")
signal.signal(signal.SIGINT, handler)
def on_step(step):
    if step["iter"] == 1:
        print("stepping", flush=True)
try:
    training.train(data={corpus(tmp_path)!r}, out={str(tmp_path / 'run')!r}, iters=10**7, eval_every=10**7,
                   on_step=on_step, {SMALL})
except KeyboardInterrupt as e:
    print("KeyboardInterrupt", e, flush=True)
print("alive", len(seen) >= 1, os.path.exists({str(tmp_path / 'run' / 'train_state.safetensors')!r}), flush=True)
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("stepping"):
            break
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, (p.returncode, out, err)
    assert "alive True True" in out, (out, err)
    assert "KeyboardInterrupt the run stopped after iter" in out, (out, err)


def test_overlapping_runs_from_threads_leave_ctrl_c_to_python(tmp_path):
    out = returns(f"""
        import os, signal, threading
        from attograd import training
        both = threading.Barrier(2)

        def on_step(step):
            if step["iter"] == 1:
                both.wait(timeout=60)  # both runs are inside train() at once

        def run(name):
            training.train(data={corpus(tmp_path)!r}, out=os.path.join({str(tmp_path)!r}, name), iters=3,
                           eval_every=10**6, on_step=on_step, {SMALL})

        threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        for attempt in range(3):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):
                    pass
                print("nothing raised")
            except KeyboardInterrupt:
                print("KeyboardInterrupt")
    """)
    assert out.splitlines() == ["True", "KeyboardInterrupt", "KeyboardInterrupt", "KeyboardInterrupt"]
