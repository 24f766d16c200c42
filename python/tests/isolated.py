"""Running a snippet in a fresh interpreter, for the hardening tests (test_harden_*.py): a case
that once crashed the interpreter (a segfault, a stack overflow, an exit) runs in its own process,
so that if it crashes again it fails its own test instead of ending the pytest run.

The child imports attograd as torch, runs the snippet, and reports what it raised (the type's
whole MRO and the message) on its last line; the parent checks the child ended normally."""

import json
import os
import subprocess
import sys
import textwrap

_PRELUDE = """
import json, sys, traceback
import attograd as torch
def _report(outcome, exc=None):
    sys.stdout.flush()
    info = {"outcome": outcome}
    if exc is not None:
        info.update(types=[c.__name__ for c in type(exc).__mro__], message=str(exc))
    print("\\n@@ISOLATED@@" + json.dumps(info))
try:
    exec(compile(SNIPPET, "<snippet>", "exec"), {"torch": torch, "__name__": "__snippet__"})
except BaseException as e:  # KeyboardInterrupt and SystemExit included: they are what is checked
    _report("raised", e)
else:
    _report("returned")
"""


class Outcome:
    """What the child did: `raised` (with `types`, its exception's MRO names, and `message`) or
    `returned`; `stdout` is what the snippet printed; `returncode` the child's exit status."""

    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stderr = proc.stderr
        out, _, last = proc.stdout.rpartition("@@ISOLATED@@")
        self.stdout = out.rstrip("\n")
        try:
            info = json.loads(last.strip().splitlines()[0]) if last.strip() else {}
        except ValueError:
            info = {}
        self.outcome = info.get("outcome", "crashed")
        self.types = info.get("types", [])
        self.message = info.get("message", "")

    def __repr__(self):
        return (f"Outcome({self.outcome}, rc={self.returncode}, types={self.types}, message={self.message!r}, "
                f"stdout tail={self.stdout[-300:]!r}, stderr tail={self.stderr[-1500:]!r})")


def run(snippet, timeout=120, env=None):
    """Runs `snippet` (torch is attograd) in a new interpreter; the child's end as an Outcome."""
    code = f"SNIPPET = {textwrap.dedent(snippet)!r}\n" + _PRELUDE
    child_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=child_env)
    return Outcome(proc)


def raises(snippet, exc_type, match=None, timeout=120):
    """Asserts that the snippet raises an exception of type `exc_type` (a name, checked against
    the MRO) whose message contains each of `match` (a string or a list), and that the child
    then ended normally: the interpreter survived the bad input. Returns the Outcome."""
    r = run(snippet, timeout=timeout)
    assert r.returncode == 0 and r.outcome == "raised", r
    assert exc_type in r.types, r
    for part in [match] if isinstance(match, str) else (match or []):
        assert part in r.message, r
    return r


def returns(snippet, timeout=120):
    """Asserts that the snippet runs to its end in a child that ends normally; its printed lines."""
    r = run(snippet, timeout=timeout)
    assert r.returncode == 0 and r.outcome == "returned", r
    return r.stdout
