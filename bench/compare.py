#!/usr/bin/env python3
"""`make bench`: attograd next to PyTorch on the same models, configurations and 2 cores.

Runs every measurement in a fresh process (peak memory is per process):
  * attograd: `attograd bench train|forward --config C --threads T` for T in 1, 2, then
    `bench sample --batch 1,8` (T = 1, 2), `bench attention --len T` for T = 64 .. 2048, and `bench sgemm`;
  * PyTorch: bench/torch_baseline.py with the interpreter given by --torch-python (default: the
    first of $TORCH_PYTHON, .venv-torch/bin/python, /usr/bin/python3 that imports torch), at
    each of its thread settings and modes, its --attention mode at the same lengths, and again
    with --decode (KV-cache sampling).
Then prints one side-by-side table: each side at its own best setting, and the ratio; then the
speedrun (docs/speedrun.md): `attograd train --config configs/speedrun.toml --time-budget S` and
its PyTorch twin, bench/torch_speedrun.py reading the same file, one after the other on the same
cores for the same wall time, each with the validation loss of the whole split it reached; then
the Python front (bench/python_front.py, attograd from the build's venv): 10^5 small tensor ops
from Python beside the same loop in torch eager, in alternating rounds, GEMM work on two
Python threads against one (the GIL released), and the default model's training step written in
Python against `attograd bench train`'s, alternating round by round.
Needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(cmd: list[str], env: dict | None = None) -> list[dict]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(f"bench: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}\n")
    out = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def find_torch_python(given: str | None) -> str | None:
    candidates = [given] if given else [os.environ.get("TORCH_PYTHON"), os.path.join(ROOT, ".venv-torch/bin/python"),
                                        "/usr/bin/python3"]
    for py in candidates:
        if py and os.path.exists(py):
            ok = subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0
            if ok:
                return py
    return None


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


BEGIN = "<!-- make bench: begin (bench/compare.py writes this block; do not edit it by hand) -->"
END = "<!-- make bench: end -->"


def cpu_features() -> str:
    """The CPU features that decide the GEMM kernels: vector width and bf16 instructions."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return "unknown features"
    wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    have = [w for w in wanted if w in flags]
    return " ".join(have) if have else "none of " + " ".join(wanted)


def write_readme_table(path: str, report: list[str], lines: list[dict], load_at_start: tuple) -> None:
    """Puts this run's table between BEGIN and END in path, saying on what it ran."""
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"bench: {path} has no '{BEGIN}' ... '{END}' block; not written", file=sys.stderr)
        return
    sg = next((r for r in lines if r.get("bench") == "sgemm"), {})
    torch_versions = sorted({r["torch"] for r in lines if r.get("side") == "torch" and "torch" in r})
    load_now = os.getloadavg()
    what = (f"Measured by `make bench` on {time.strftime('%Y-%m-%d')}: {cpu_name()}, {os.cpu_count()} cores; "
            f"{sg.get('blas_config', 'OpenBLAS')} with its {sg.get('blas_core', '?')} kernels; against pip's torch "
            f"{', '.join(torch_versions) or '?'}; load average {load_at_start[0]:.1f} at the start, {load_now[0]:.1f} at the end.")
    block = "\n".join([BEGIN, what, "", "```text", *[l for l in report], "```", END])
    while block.count("```text\n\n"):
        block = block.replace("```text\n\n", "```text\n")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + block + tail)
    print(f"bench: wrote the table into {path}")


def run_speedrun(ag: str, torch_py: str | None, budget_s: float, data: str | None) -> list[dict]:
    """Both sides of the speedrun for budget_s seconds each, timed from process start to exit."""
    if data is None:
        found = subprocess.run([os.path.join(ROOT, "scripts/find-corpus.sh")], capture_output=True, text=True)
        if found.returncode != 0:
            return [{"bench": "speedrun", "side": "attograd", "budget_s": budget_s,
                     "error": "no corpus (scripts/find-corpus.sh failed)"}]
        data = found.stdout.strip()
    config = os.path.join(ROOT, "configs/speedrun.toml")
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="attograd-speedrun-") as tmp:
        run_dir = os.path.join(tmp, "run")
        t0 = time.perf_counter()
        proc = subprocess.run([ag, "train", "--config", config, "--time-budget", str(budget_s), "--data", data,
                               "--out", run_dir, "--sample-tokens", "0"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rec = {"bench": "speedrun", "side": "attograd", "label": "attograd", "budget_s": budget_s, "wall_s": wall}
        evals = []
        if proc.returncode == 0:
            with open(os.path.join(run_dir, "metrics.jsonl")) as f:
                evals = [r for r in map(json.loads, f) if "val_loss" in r]
        if evals:
            rec.update(val_loss=evals[-1]["val_loss"], iters=evals[-1]["iter"],
                       ms_per_step=1e3 * wall / max(1, evals[-1]["iter"]),
                       budget_notes=[l for l in proc.stdout.splitlines() if l.startswith("time budget")])
        else:
            rec["error"] = f"attograd train exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        out.append(rec)
    if torch_py:
        t0 = time.perf_counter()
        proc = subprocess.run([torch_py, os.path.join(ROOT, "bench/torch_speedrun.py"), "--config", config, "--data", data,
                               "--time-budget", str(budget_s), "--threads", str(os.cpu_count() or 1)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        res = [r for r in map(json.loads, (l for l in proc.stdout.splitlines() if l.startswith("{"))) if "result" in r]
        rec = {"bench": "speedrun", "side": "torch", "budget_s": budget_s, "wall_s": wall}
        if proc.returncode == 0 and res:
            rec.update(label=f"PyTorch {res[-1]['torch']}", val_loss=res[-1]["val_loss"], iters=res[-1]["iters"],
                       ms_per_step=1e3 * wall / max(1, res[-1]["iters"]))
        else:
            rec["error"] = f"torch_speedrun.py exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        out.append(rec)
    return out


def find_corpus(data: str | None) -> str | None:
    if data:
        return data
    found = subprocess.run([os.path.join(ROOT, "scripts/find-corpus.sh")], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def run_time_to_loss(ag: str, torch_py: str | None, steps: int, every: int, data: str | None) -> list[dict]:
    """bench/time_to_loss.py: each side's training time to val 1.70, 1.60 and 1.55."""
    data = find_corpus(data)
    if data is None:
        return [{"bench": "time_to_loss", "side": "attograd", "error": "no corpus (scripts/find-corpus.sh failed)"}]
    cmd = [sys.executable, os.path.join(ROOT, "bench/time_to_loss.py"), "--attograd", ag, "--data", data,
           "--iters", str(steps), "--eval-every", str(every)] + (["--torch-python", torch_py] if torch_py else [])
    return run_json(cmd)


def report_time_to_loss(lines: list[dict], say) -> None:
    ttl = {r["side"]: r for r in lines if r.get("bench") == "time_to_loss"}
    if "attograd" not in ttl:
        return
    ra, rt = ttl["attograd"], ttl.get("torch")
    say(f"\ntime to a validation loss (bench/time_to_loss.py): the speedrun recipe for {ra.get('iters')} steps on each "
        f"side, one after the other, the whole split evaluated every {ra.get('eval_every')} steps; seconds of training "
        "steps (start-up, evaluations and checkpoints left out); ratio = PyTorch's / attograd's:")
    for r in (ra, rt):
        if r and r.get("error"):
            say(f"  {r['side']}: {r['error']}")
    if ra.get("error"):
        return
    label = f"PyTorch {rt.get('torch', '')} twin" if rt and not rt.get("error") else "PyTorch twin"
    say(f"  {'val':>6} {'attograd s':>11} {label + ' s':>22} {'ratio':>6}")
    for target, t_ag in ra["seconds_to"].items():
        t_pt = rt["seconds_to"].get(target) if rt and not rt.get("error") else None
        fmt = lambda t: f"{t:.1f}" if t is not None else "not reached"
        ratio = f"{t_pt / t_ag:.2f}" if t_ag and t_pt else ""
        say(f"  {target:>6} {fmt(t_ag):>11} {fmt(t_pt):>22} {ratio:>6}")
    say(f"  final val: attograd {ra['final_val']:.4f} in {ra['train_s']:.1f} s"
        + (f", PyTorch {rt['final_val']:.4f} in {rt['train_s']:.1f} s" if rt and not rt.get("error") else "")
        + f"; load average at the start {ra['load_avg']:.1f}")


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def run_python_front(ag_py: str, ag_path: str, torch_py: str | None, quick: bool, ag: str = "") -> list[dict]:
    """bench/python_front.py in fresh processes, attograd and torch alternating round by round."""
    if not os.path.exists(ag_py) or not os.path.isdir(os.path.join(ag_path, "attograd")):
        print(f"bench: no attograd Python package at {ag_path} (make build makes it); skipping the Python front",
              file=sys.stderr)
        return []
    script = os.path.join(ROOT, "bench/python_front.py")
    env = dict(os.environ, PYTHONPATH=ag_path)
    rounds, n_ops, gemms = (1, "10000", "20") if quick else (5, "100000", "200")
    lines: list[dict] = []
    for what in ("ops", "ops_grad"):
        for _ in range(rounds):
            lines += run_json([ag_py, script, "--module", "attograd", "--what", what, "--ops", n_ops], env)
            if torch_py:
                lines += run_json([torch_py, script, "--module", "torch", "--what", what, "--ops", n_ops])
    for _ in range(rounds):
        lines += run_json([ag_py, script, "--module", "attograd", "--what", "threads", "--gemms", gemms], env)
    # The training step from Python and from the command, round after round on the same cores.
    step_secs = ["--seconds", "0.5", "--max-steps", "3"] if quick else ["--seconds", "6"]
    for _ in range(rounds if ag else 0):
        for rec in run_json([ag, "bench", "train", "--config", "default", "--threads", "2", "--json"] + step_secs):
            rec.update(bench="python_train_step", side="cli", load=os.getloadavg()[0])
            lines.append(rec)
        for rec in run_json([ag_py, script, "--module", "attograd", "--what", "train_step", "--threads", "2"] + step_secs,
                            env):
            rec.update(side="python", load=os.getloadavg()[0])
            lines.append(rec)
    return lines


def report_python_front(lines: list[dict], say) -> None:
    ops = [r for r in lines if r.get("bench") in ("python_ops", "python_ops_grad")]
    thr = [r for r in lines if r.get("bench") == "python_threads"]
    steps = [r for r in lines if r.get("bench") == "python_train_step"]
    if not ops and not thr and not steps:
        return
    say("\nPython front (bench/python_front.py; median of alternating rounds, one thread each side):")
    for bench, label in (("python_ops", "small tensor ops"), ("python_ops_grad", "small ops + backward")):
        ag = [r["us_per_op"] for r in ops if r["bench"] == bench and r["side"] == "attograd"]
        tt = [r["us_per_op"] for r in ops if r["bench"] == bench and r["side"] == "torch"]
        if not ag:
            continue
        n = next(r["ops"] for r in ops if r["bench"] == bench)
        line = f"  {label:<22} {n} ops: attograd {median(ag):.2f} us/op"
        if tt:
            line += (f", torch {next(r['version'] for r in ops if r['side'] == 'torch')} eager {median(tt):.2f} us/op: "
                     f"attograd takes {median(ag) / median(tt):.2f}x torch's time")
        say(line)
    if thr:
        ratios = [r["ratio"] for r in thr]
        controls = [r["control_ratio"] for r in thr]
        say(f"  GEMM work on two Python threads / on one ({thr[0]['gemms']} products of 384x384 each, attograd pool "
            f"at 1 thread): {median(ratios):.2f}x the wall time (target < 1.5; 2 would mean the GIL serialised them), "
            f"rounds {', '.join(f'{x:.2f}' for x in ratios)}; the GIL-free control (hashlib) {median(controls):.2f}x "
            f"(what the machine gave two threads); load average {os.getloadavg()[0]:.1f}")
    cli = [r["ms_per_step"] for r in steps if r["side"] == "cli"]
    py = [r["ms_per_step"] for r in steps if r["side"] == "python"]
    if cli and py:
        pairs = [p / c for c, p in zip(cli, py)]
        gemms = sorted({f"{r['side']} {r.get('gemm', '?')}" for r in steps})
        say(f"  default model's training step (2 threads; GEMMs: {', '.join(gemms)}): from Python {median(py):.1f} ms, `attograd bench train` "
            f"{median(cli):.1f} ms: Python/CLI {median(pairs):.3f}x (median of {len(pairs)} alternating rounds: "
            f"{', '.join(f'{x:.3f}' for x in pairs)}; the fastest round of each side {min(py) / min(cli):.3f}x, "
            f"what a loaded machine disturbs least; target within 5%); load average "
            f"{median([r['load'] for r in steps]):.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attograd", default=os.path.join(ROOT, "build/attograd"))
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--configs", default="default,large")
    ap.add_argument("--precisions", default="fp32,bf16",
                    help="attograd --precision and torch's (bf16: torch.autocast(\"cpu\", torch.bfloat16)), like with like")
    ap.add_argument("--gemm", default="auto", help="attograd --gemm: auto, openblas or onednn")
    ap.add_argument("--seconds", type=float, default=8.0, help="measuring time per attograd benchmark")
    ap.add_argument("--quick", action="store_true", help="smoke run: a few steps of everything, default config only")
    ap.add_argument("--no-torch", action="store_true", help="attograd's side only")
    ap.add_argument("--torch-threads", default=None,
                    help="torch x OpenBLAS thread settings for the PyTorch models (torch_baseline.py --threads; "
                         "default: all four; pip's torch uses MKL, so 1x1,2x1 cover it)")
    ap.add_argument("--speedrun", type=float, default=None,
                    help="the speedrun's wall-clock budget in seconds, for each side (default: 120; --quick: 15; 0: skip)")
    ap.add_argument("--data", default=None, help="the corpus for the speedrun (default: scripts/find-corpus.sh)")
    ap.add_argument("--time-to-loss", type=int, default=None, metavar="STEPS",
                    help="time to val 1.70, 1.60 and 1.55, each side's run of the speedrun recipe for STEPS steps "
                         "(bench/time_to_loss.py; default: 2500; --quick: 40; 0: skip)")
    ap.add_argument("--speedrun-only", action="store_true", help="the speedrun alone (README.md is not rewritten)")
    ap.add_argument("--out", default=None, help="also write every JSON line to this file")
    ap.add_argument("--attograd-python", default=os.path.join(ROOT, "build/python-venv/bin/python"),
                    help="the Python with the package's dependencies (make build's venv)")
    ap.add_argument("--attograd-pythonpath", default=os.path.join(ROOT, "build/python"),
                    help="where the built package attograd is (make build puts it in BUILD/python)")
    ap.add_argument("--no-python-front", action="store_true", help="skip the Python front's measurements")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                    help="a full run with PyTorch rewrites the speed table of this file ('' for none)")
    a = ap.parse_args()

    load_at_start = os.getloadavg()
    configs = ["default"] if a.quick else a.configs.split(",")
    secs = ["--seconds", "0.5", "--max-steps", "3"] if a.quick else ["--seconds", str(a.seconds)]
    ag = a.attograd
    lines: list[dict] = []

    # ---- attograd --------------------------------------------------------------------------
    if a.speedrun_only:
        configs = []
    precisions = [p.strip() for p in a.precisions.split(",") if p.strip()]
    gemm = ["--gemm", a.gemm]
    for c in configs:
        for p in precisions:
            for what in ("train", "forward"):
                for t in (1, 2):
                    lines += run_json([ag, "bench", what, "--config", c, "--threads", str(t), "--json",
                                       "--precision", p] + gemm + secs)
        # each provider's GEMM speed at this configuration's shapes, fp32 and bf16
        lines += run_json([ag, "bench", "gemm", "--config", c, "--threads", "1", "--json"])
        for t in (1, 2):  # decoding at batch 1 and 8, next to the memory-bandwidth bound
            lines += run_json([ag, "bench", "sample", "--config", c, "--threads", str(t), "--batch", "1,8", "--json",
                               "--tokens", "50" if a.quick else "500"])
    att_lens = [] if a.speedrun_only else [64] if a.quick else [64, 128, 256, 512, 1024, 2048]
    for T in att_lens:
        lines += run_json([ag, "bench", "attention", "--len", str(T), "--json"] + secs)
    if not a.speedrun_only:
        lines += run_json([ag, "bench", "sgemm", "--json"])

    # ---- PyTorch ---------------------------------------------------------------------------
    torch_py = None if a.no_torch else find_torch_python(a.torch_python)
    if torch_py and not a.speedrun_only:
        cmd = [sys.executable, os.path.join(ROOT, "bench/torch_baseline.py"), "--python", torch_py,
               "--configs", ",".join(configs), "--precisions", ",".join(precisions)] + (
                   ["--threads", a.torch_threads] if a.torch_threads else [])
        if a.quick:
            cmd.append("--quick")
        env = dict(os.environ)
        env.setdefault("OPENBLAS_CORETYPE", "SkylakeX")  # as attograd, where OpenBLAS lacks this CPU
        for rec in run_json(cmd, env):
            rec["side"] = "torch"
            rec["bench"] = "train"  # each PyTorch line carries both training and forward figures
            lines.append(rec)
        cmd = [sys.executable, os.path.join(ROOT, "bench/torch_baseline.py"), "--python", torch_py, "--attention",
               "--lens", ",".join(map(str, att_lens))] + (["--quick"] if a.quick else [])
        for rec in run_json(cmd, env):
            rec["side"] = "torch"
            lines.append(rec)
        dec = [sys.executable, os.path.join(ROOT, "bench/torch_baseline.py"), "--python", torch_py, "--decode",
               "--configs", ",".join(configs)] + (["--quick"] if a.quick else [])
        for rec in run_json(dec, env):
            rec["side"] = "torch"  # bench: "sample"
            lines.append(rec)
    elif not torch_py and not a.no_torch:
        print("bench: no Python with torch found (install python3-torch, or pip's torch into .venv-torch); "
              "showing attograd only", file=sys.stderr)

    speedrun_s = a.speedrun if a.speedrun is not None else (15.0 if a.quick else 120.0)
    if speedrun_s > 0:
        lines += run_speedrun(ag, torch_py, speedrun_s, a.data)

    ttl_steps = a.time_to_loss if a.time_to_loss is not None else (40 if a.quick else 2500)
    if ttl_steps > 0:
        lines += run_time_to_loss(ag, torch_py, ttl_steps, 20 if a.quick else 100, a.data)

    if not a.no_python_front and not a.speedrun_only:
        lines += run_python_front(a.attograd_python, a.attograd_pythonpath, torch_py, a.quick, ag)

    if a.out:
        with open(a.out, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec) + "\n")

    # ---- the table -------------------------------------------------------------------------
    def best(side: str, bench: str, config: str, key: str, precision: str = "fp32"):
        cands = [r for r in lines if r.get("side") == side and r.get("config") == config and key in r
                 and (r.get("bench", bench) == bench) and not r.get("error")
                 and r.get("precision", "fp32") == precision]
        return max(cands, key=lambda r: r[key]) if cands else None

    report: list[str] = []

    def say(text: str = "") -> None:
        print(text)
        report.extend(text.split("\n"))

    say(f"\nmachine: {cpu_name()}, {os.cpu_count()} cores; features: {cpu_features()}")
    providers: dict = {}  # (precision, provider) -> (how the first run chose it, the bf16 path)
    for r in lines:
        if r.get("side") == "attograd" and r.get("bench") == "train" and r.get("gemm_provider"):
            providers.setdefault((r.get("precision"), r["gemm_provider"]), (r.get("gemm_chosen"), r.get("bf16_path")))
    for (prec, prov), (how, path) in sorted(providers.items(), key=str):
        say(f"attograd {prec}: gemm {prov}, {how}" + (f"; {path}" if path else ""))
    if configs:
        say("training step = forward + backward + clip + AdamW; each side at its best thread setting; bf16 = "
            "attograd --precision bf16 against torch.autocast(\"cpu\", torch.bfloat16)\n")
        hdr = (f"{'config':<8} {'prec':<5} {'what':<8} {'attograd tok/s':>15} {'setting':<10} {'PyTorch tok/s':>14} "
               f"{'setting':<34} {'ratio':>6}")
        say(hdr)
        say("-" * len(hdr))
    for c, p in [(c, p) for c in configs for p in precisions]:
        for what, key_ag, key_t in (("train", "tokens_per_s", "tokens_per_s"), ("forward", "tokens_per_s", "fwd_tokens_per_s")):
            ra = best("attograd", what, c, key_ag, p)
            rt = best("torch", "train", c, key_t, p)
            ag_s = f"{ra[key_ag]:15.0f}" if ra else f"{'-':>15}"
            ag_set = f"{ra['threads']} thr" if ra else ""
            if rt:
                mode = rt.get("mode", "eager")
                t_set = f"torch {rt.get('torch', '?')} {mode} {rt.get('torch_threads', '?')}x{rt.get('openblas_threads', '?')}"
                t_s = f"{rt[key_t]:14.0f}"
                ratio = f"{ra[key_ag] / rt[key_t]:6.2f}" if ra else ""
            else:
                t_set, t_s, ratio = "", f"{'-':>14}", ""
            say(f"{c:<8} {p:<5} {what:<8} {ag_s} {ag_set:<10} {t_s} {t_set:<34} {ratio:>6}")
    say()
    for c, p in [(c, p) for c in configs for p in precisions]:
        ra = best("attograd", "train", c, "tokens_per_s", p)
        rt = best("torch", "train", c, "tokens_per_s", p)
        if ra:
            say(f"{c} {p}: attograd {ra['ms_per_step']:.1f} ms/step, {ra['gflops']:.1f} GFLOP/s, MFU {100 * ra['mfu']:.1f}% of "
                  f"{ra['sgemm_peak_gflops']:.0f} GFLOP/s {p} GEMM peak, peak RSS {ra['peak_rss_mb']:.0f} MB"
                  + (f"; PyTorch {rt['ms_per_step']:.1f} ms/step, peak RSS {rt['peak_rss_mb']:.0f} MB" if rt else ""))
    # The GEMM floor of each precision: the step's own GEMMs replayed alone through its provider at
    # its precision, warm in cache, with no other work and no waiting between them.
    say()
    for c, p in [(c, p) for c in configs for p in precisions]:
        floors = [r for r in lines if r.get("side") == "attograd" and r.get("bench") == "train" and r.get("config") == c
                  and "gemm_floor_ms" in r and r.get("precision", "fp32") == p]
        if not floors:
            continue
        f = min(floors, key=lambda r: r["gemm_floor_ms"])
        line = (f"{c} {p}: GEMM floor {f['gemm_floor_ms']:.1f} ms/step ({f['gemm_calls']} GEMMs, {f['gemm_gflop']:.2f} GFLOP, "
                f"{f['threads']} thr) = at most {f['gemm_floor_tokens_per_s']:.0f} tok/s")
        ra = best("attograd", "train", c, "tokens_per_s", p)
        if ra and "gemm_floor_ms" in ra:  # the fastest step against the floor of its own thread count
            # (step_over_floor: the median of its rounds, each step set against the floor replayed
            # right after it, which the machine's drift moves less than the two means)
            ratio = ra.get("step_over_floor", ra["ms_per_step"] / ra["gemm_floor_ms"])
            line += (f"; the fastest step ({ra['threads']} thr, {ra['ms_per_step']:.1f} ms) is "
                     f"{ratio:.2f}x its floor ({ra['gemm_floor_ms']:.1f} ms)")
            # Where the host ran the threads (bench/README.md: on a 2-vCPU VM the default step has
            # one speed when they share an L3, about 40-120 ns a round trip, and another at 330).
            trips = [t for t in ra.get("core_round_trip_ns_rounds", []) if t is not None]
            if trips:
                line += f"; its rounds began at {'/'.join(f'{t:.0f}' for t in trips)} ns round trips between threads"
        # The floor against the cores' own multiply-add limit (tuning/fma_peak.h): the provider's
        # distance from the machine's matmul limit, apart from the step's.
        if f.get("fma_peak_gflops") and f.get("floor_of_fma_peak"):
            line += (f"; the floor runs at {100 * f['floor_of_fma_peak']:.0f}% of the cores' {f['fma_peak']} peak "
                     f"({f['fma_peak_gflops']:.0f} GFLOP/s, {f['threads']} thr), which caps the step at "
                     f"{f['fma_ceiling_tokens_per_s']:.0f} tok/s")
        say(line)
    samples = [r for r in lines if r.get("bench") == "sample" and "batch" in r and not r.get("error")]
    if samples:
        say("\nsampling with the KV cache, tokens/s over all rows, each side at its best thread count; "
              "bound = batch x copy bandwidth / weight bytes per step:")
        say("(step: attograd's decode step alone, one token per row over an empty-to-full window)")
        say(f"{'config':<8} {'batch':>5} {'attograd':>9} {'thr':>3} {'PyTorch':>9} {'thr':>3} {'ratio':>6} "
              f"{'step':>8} {'bound':>8} {'of bound':>8}")
    for c in configs:
        for batch in sorted({r["batch"] for r in samples if r.get("config") == c}):
            rows = [r for r in samples if r.get("config") == c and r["batch"] == batch]
            ra = max((r for r in rows if r.get("side") == "attograd"), key=lambda r: r["tokens_per_s"], default=None)
            rt = max((r for r in rows if r.get("side") == "torch"), key=lambda r: r["tokens_per_s"], default=None)
            ag_s = f"{ra['tokens_per_s']:9.0f} {ra['threads']:>3}" if ra else f"{'-':>9} {'':>3}"
            t_s = f"{rt['tokens_per_s']:9.0f} {rt['torch_threads']:>3}" if rt else f"{'-':>9} {'':>3}"
            ratio = f"{ra['tokens_per_s'] / rt['tokens_per_s']:6.2f}" if ra and rt else f"{'':>6}"
            bound = (f"{ra['decode_step_tokens_per_s']:8.0f} {ra['bound_tokens_per_s']:8.0f} "
                     f"{100 * ra['step_over_bound']:7.0f}%") if ra else ""
            say(f"{c:<8} {batch:>5} {ag_s} {t_s} {ratio} {bound}")
    ag_samples = [r for r in samples if r.get("side") == "attograd"]
    if ag_samples:
        r = ag_samples[0]
        weights = {q["config"]: q["weight_mb_per_step"] for q in ag_samples}
        say(f"copy bandwidth (256 MB memcpy, bytes read + written): {r['copy_gbps_1thread']:.1f} GB/s on 1 thread, "
              f"{r['copy_gbps_all_threads']:.1f} on {r['copy_threads']}; weights read per step: "
              + ", ".join(f"{c} {mb:.1f} MB" for c, mb in weights.items()))
    att = [r for r in lines if r.get("side") == "attograd" and r.get("bench") == "attention"]
    if att:
        say("\nMultiheadAttention forward + backward (E 128, 4 heads, batch 4, causal), and the attention op alone")
        say("(q, k, v (4, 4, T, 32)) beside PyTorch's F.scaled_dot_product_attention(is_causal=True) at its best")
        say("thread setting; mha is nanoGPT's block around it (ratio: PyTorch ms / attograd ms, above 1 is faster):")
        say(f"{'T':>6} {'ms':>9} {'tensor peak MB':>15} {'RSS MB':>8} {'sdpa ms':>9} {'torch sdpa':>11} {'ratio':>6} "
              f"{'torch mha':>10} {'ratio':>6}")
        for r in att:
            tt = [t for t in lines if t.get("side") == "torch" and t.get("bench") == "attention" and t.get("len") == r["len"]
                  and not t.get("error")]
            ts = min(tt, key=lambda t: t["sdpa_ms"]) if tt else None
            tm = min(tt, key=lambda t: t["mha_ms"]) if tt else None
            sd = r.get("ms_sdpa_fwd_bwd")
            cols = f"{sd:>9.2f}" if sd else f"{'-':>9}"
            cols += (f" {ts['sdpa_ms']:>11.2f} {ts['sdpa_ms'] / sd:>6.2f} {tm['mha_ms']:>10.2f} {tm['mha_ms'] / r['ms_fwd_bwd']:>6.2f}"
                     if ts and sd else "")
            say(f"{r['len']:>6} {r['ms_fwd_bwd']:>9.2f} {r['tensor_peak_mb']:>15.1f} {r['peak_rss_mb']:>8.0f} {cols}")
    runs = [r for r in lines if r.get("bench") == "speedrun"]
    if runs:
        say(f"\nspeedrun (configs/speedrun.toml, whole validation split), {runs[0]['budget_s']:.0f} s of wall time each, "
            "one side after the other; wall = the process, start to end; ms/step = wall / steps:")
        say(f"{'side':<22} {'val loss':>8} {'steps':>6} {'ms/step':>8} {'wall s':>7}")
        for r in runs:
            if r.get("error"):
                say(f"{r['side']:<22} {r['error']}")
                continue
            say(f"{r['label']:<22} {r['val_loss']:>8.4f} {r['iters']:>6} {r['ms_per_step']:>8.1f} {r['wall_s']:>7.1f}")
    report_time_to_loss(lines, say)
    gm = [r for r in lines if r.get("side") == "attograd" and r.get("bench") == "gemm" and not r.get("error")]
    if gm:
        say(f"\nGEMM providers, GFLOP/s per thread at each configuration's GEMM shapes (1 thread; {gm[0]['onednn']}; "
            f"{gm[0]['openblas']}):")
        for r in gm:
            say(f"{r['config']:<8} fp32: openblas {r['openblas_fp32_gflops_per_thread']:.0f}, onednn "
                f"{r['onednn_fp32_gflops_per_thread']:.0f};  bf16: openblas (portable) {r['openblas_bf16_gflops_per_thread']:.0f}, "
                f"onednn {r['onednn_bf16_gflops_per_thread']:.0f}")
    sg = [r for r in lines if r.get("bench") == "sgemm"]
    if sg:
        say(f"\nsgemm ({sg[0]['blas_core']} kernels): {sg[0]['gflops_2048_1thread']:.0f} GFLOP/s at 2048³ on 1 thread, "
              f"{sg[0]['gflops_2048']:.0f} on {sg[0]['threads']}; {sg[0]['gflops_512']:.0f} GFLOP/s at 512³")
    report_python_front(lines, say)
    if a.readme and not a.quick and not a.speedrun_only and torch_py:
        write_readme_table(a.readme, report, lines, load_at_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
