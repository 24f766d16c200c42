#!/usr/bin/env python3
"""Runs every example command of README.md as written, after the README's own steps.

The commands are the lines of the README's ```sh blocks (a trailing backslash continues a
line; `# ...` after a command is a comment). They run with bash, one by one and in README
order, in a scratch folder laid out like a checkout after `make train`:
    build/    -> the build folder under test
    configs/  -> the source tree's configs
    scripts/find-corpus.sh  -> runs the source tree's script (so it finds the corpus as in a checkout)
    runs/shakespeare        -> a short run of `make train`'s own command (--iters 30 instead of 2000)

Every command must exit 0. A `train` command, once it has started training (its first
evaluation or logged step), is stopped the way a user stops one, with Ctrl-C (SIGINT to its
process group), and must then exit 130 after writing its checkpoint (mpirun: 1, as it reports
its own signal, with its ranks' checkpoint written): that is the run working as documented,
in seconds instead of minutes. `make train` and `make test` are the steps this suite runs under,
and the one command that needs the several machines of its hostfile is not run; both are
listed, and any other command the script does not run is a failure.

usage: readme_commands.py README ATTOGRAD_BUILD_DIR SOURCE_DIR WORKDIR WITH_MPI(ON|OFF)
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

SETUP = {"make train", "make test"}  # the README's own steps: this test runs inside `make test`
NEEDS_MACHINES = "--hostfile"  # a hostfile of machines that do not exist here
TIMEOUT_S = 300  # per command


def strip_comment(line: str) -> str:
    """`cmd args  # comment` -> `cmd args`, leaving a # inside quotes alone."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def readme_commands(text: str) -> list[str]:
    commands: list[str] = []
    in_sh = False
    pending = ""
    for raw in text.splitlines():
        if not in_sh:
            in_sh = raw.strip() == "```sh"
            continue
        if raw.strip() == "```":
            in_sh = False
            continue
        line = strip_comment(raw)
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = (pending + line.strip()).strip()
        pending = ""
        if line:
            commands.append(line)
    return commands


# Training has started: the first evaluation line, a logged step, or a frame of the progress
# bar (under mpirun a rank's output goes through a terminal, so rank 0 draws the bar).
STARTED = re.compile(r"^eval  iter|^iter +\d+/\d+|\] \d+/\d+  loss", re.M)


def run(cmd: str, cwd: str, env: dict, log, stop_once_started: bool = True) -> tuple[int, str, bool]:
    """Runs cmd; Ctrl-C's a training command once it has started. (status, output, interrupted)."""
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    out = b""
    interrupted = False
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            out += f"\n[readme_commands: killed after {TIMEOUT_S} s]\n".encode()
            break
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
        log.write(chunk.decode("utf-8", "replace"))
        if stop_once_started and not interrupted and STARTED.search(out.decode("utf-8", "replace")):
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
            interrupted = True
    status = proc.wait()
    return status, out.decode("utf-8", "replace").replace("\r", "\n"), interrupted


def main() -> int:
    readme, build, src, work, with_mpi = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "scripts"))
    os.symlink(os.path.abspath(build), os.path.join(work, "build"))
    os.symlink(os.path.join(src, "configs"), os.path.join(work, "configs"))
    wrapper = os.path.join(work, "scripts", "find-corpus.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/usr/bin/env bash\nexec "{src}/scripts/find-corpus.sh" "$@"\n')
    os.chmod(wrapper, 0o755)

    env = dict(os.environ)
    # OpenMPI refuses to run as root without these, and the test's traffic stays on loopback;
    # set here, in the environment, so that the commands stay exactly as the README has them.
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"})

    with open(readme) as f:
        commands = readme_commands(f.read())
    failures: list[str] = []
    ran = skipped = 0
    with open(os.path.join(work, "log.txt"), "w") as log:
        # After `make train`: its command (see the Makefile), with fewer steps.
        prep = 'build/attograd train --data "$(scripts/find-corpus.sh)" --out runs/shakespeare --iters 30 --no-progress'
        status, out, _ = run(prep, work, env, log, stop_once_started=False)
        if status != 0:
            print(f"FAIL: the make train step failed ({status}):\n{out}")
            return 1
        for cmd in commands:
            if cmd in SETUP or NEEDS_MACHINES in cmd:
                why = "a set-up step of the README" if cmd in SETUP else "needs the machines of its hostfile"
                print(f"not run ({why}): {cmd}")
                skipped += 1
                continue
            if cmd.startswith("mpirun") and with_mpi != "ON":
                print(f"not run (this build has no MPI): {cmd}")
                continue
            log.write(f"\n$ {cmd}\n")
            t0 = time.monotonic()
            status, out, interrupted = run(cmd, work, env, log)
            # mpirun itself exits 1 when it was signalled, after its ranks stopped with 130
            # (docs/distributed.md); the ranks' own words say how they stopped.
            stopped = status == 130 or (cmd.startswith("mpirun") and status == 1)
            ok = status == 0 or (interrupted and stopped and "checkpoint written" in out)
            how = f"stopped with Ctrl-C once training had started, exit {status}" if interrupted else f"exit {status}"
            print(f"{'ok' if ok else 'FAILED'} ({how}, {time.monotonic() - t0:.1f} s): {cmd}")
            if not ok:
                tail = "".join(out.splitlines(keepends=True)[-15:])
                failures.append(f"{cmd}\n  exit {status}{' after Ctrl-C' if interrupted else ''}; its last lines:\n{tail}")
            ran += 1
    if skipped != len(SETUP) + 1:
        failures.append(f"expected to leave out exactly {len(SETUP)} set-up steps and 1 hostfile command, left out {skipped}")
    if ran == 0:
        failures.append("no README command was run: did the ```sh blocks change?")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print(f"PASS: {ran} README commands ran as written ({skipped} not run, listed above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
