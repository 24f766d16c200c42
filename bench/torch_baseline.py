#!/usr/bin/env python3
"""PyTorch side of the side-by-side benchmark: the same TransformerLM (tests/parity/twin.py)
and the same configurations as attograd, at each thread setting, one JSON object per line.

    /usr/bin/python3 bench/torch_baseline.py                       # Debian's torch 1.13
    /work/torch2/bin/python bench/torch_baseline.py                # pip's torch 2.x: eager + compile
    python3 bench/torch_baseline.py --python /usr/bin/python3      # parent without torch

Configurations (dropout 0, vocabulary 65 as tiny shakespeare, random token ids):
    default  4 layers, 4 heads, 128 wide, block 64, batch 12    (nanoGPT shakespeare_char CPU)
    large    6 layers, 6 heads, 384 wide, block 256, batch 16   (nanoGPT's GPU model shape)

For every configuration x mode x thread setting a fresh worker process is started (thread pools
cannot be resized once created): torch.set_num_threads(T) and OPENBLAS_NUM_THREADS=B in its
environment, for T, B in {1, 2}. The worker measures, after warm-up:
    * a training step: forward + loss + backward + clip_grad_norm_(1.0) + AdamW step
      (betas 0.9/0.99, weight decay 0.1 on matrices): ms_per_step (mean), median, tokens_per_s;
    * a forward pass with the loss, in eval mode under torch.no_grad(): fwd_ms, fwd_tokens_per_s;
    * peak RSS of the worker (getrusage ru_maxrss): peak_rss_mb; base_rss_mb is the peak right
      after importing torch and building the model, before any step.
Modes: eager, and with torch >= 2 also torch.compile (the model is compiled; the first step's
time, which includes compilation, is reported as compile_s and not counted).
Precisions (--precisions): fp32, and bf16 = the forward and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), backward and the optimizer outside it, as the
PyTorch recipe for CPU mixed precision has it (attograd's --precision bf16 is the same split).

--attention: instead of the models, causal attention forward + backward at the shapes of
`attograd bench attention` (batch 4, 4 heads, head size 32, T = --lens), one line per T and
torch thread count: F.scaled_dot_product_attention(q, k, v, is_causal=True) alone (sdpa_ms; on
CPU its flash kernel) and nanoGPT's causal self-attention block around it (mha_ms: qkv
projection, split heads, sdpa, merge heads, output projection), medians, with peak RSS.

Decoding (--decode): sampling with a KV cache, as `attograd bench sample` does: from the prompt
"0" in every row of a batch (1 and 8), --decode-tokens new tokens at temperature 1, the window
restarted from its last block/2 tokens when it is full (TransformerLM::generate's rule). The
twin has no cache, so decode_step() below adds one: per layer a preallocated (B, H, block, hd)
key and value tensor, written in place, and F.scaled_dot_product_attention over the filled part;
the same math as the twin's forward (checked against it before timing). Eager, under
torch.inference_mode(), at torch threads 1 and 2; the median of 3 runs: tokens_per_s over all
rows, ms_per_step.

OPENBLAS_CORETYPE: by default workers inherit it from the environment; --openblas-coretype
VALUE sets it, --openblas-coretype none removes it. Each line records the value in effect and
torch's BLAS (torch_blas): Debian's torch 1.13 calls OpenBLAS, where OPENBLAS_CORETYPE=SkylakeX
matters on this machine's CPU; pip's torch 2.x uses MKL and oneDNN, where it should not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TWIN_DIR = os.path.join(os.path.dirname(HERE), "tests", "parity")

CONFIGS = {
    "default": dict(n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=12),
    "large": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, batch_size=16),
}
VOCAB = 65
THREAD_SETTINGS = "1x1,1x2,2x1,2x2"  # torch threads x OpenBLAS threads


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _torch_blas(torch) -> str:
    """torch's BLAS: BLAS_INFO from its build config (mkl is linked statically into pip's
    wheels), plus for a 'generic' BLAS the shared libraries behind it (numpy's own bundled
    OpenBLAS, scipy_openblas, is left out: torch does not use it)."""
    import re
    m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    info = m.group(1) if m else "unknown"
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                name = os.path.basename(line.split()[-1]) if "/" in line else ""
                if "scipy_openblas" not in name and any(k in name for k in ("openblas", "mkl", "blis")):
                    libs.add(name)
    except OSError:
        pass
    return info + (" (" + ", ".join(sorted(libs)) + ")" if libs else "")


def twin_model(a: argparse.Namespace):
    """torch at a.torch_threads, and the twin of configuration a.config from seed 1337: (torch, cfg, model)."""
    import torch

    torch.set_num_threads(a.torch_threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    sys.path.insert(0, TWIN_DIR)
    import twin

    c = CONFIGS[a.config]
    torch.manual_seed(1337)
    cfg = twin.GPTConfig(vocab_size=VOCAB, n_layer=c["n_layer"], n_head=c["n_head"], n_embd=c["n_embd"],
                         block_size=c["block_size"], dropout=0.0)
    return torch, cfg, twin.TransformerLM(cfg)


def worker(a: argparse.Namespace) -> dict:
    torch, cfg, model = twin_model(a)
    import twin  # on sys.path now

    c = CONFIGS[a.config]
    model.train()
    opt = twin.make_optimizer(model, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    run = torch.compile(model) if a.mode == "compile" else model
    B, T = c["batch_size"], c["block_size"]
    gen = torch.Generator().manual_seed(0)
    corpus = torch.randint(0, VOCAB, (100_000,), generator=gen)
    batches = [twin.get_batch(corpus, B, T, gen) for _ in range(8)]
    base_rss = _maxrss_mb()
    load_before = os.getloadavg()[0]

    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.precision == "bf16" else None

    def forward(x, y):
        if autocast is None:
            return run(x, y)
        with autocast():
            return run(x, y)

    def train_step(i: int) -> float:
        x, y = batches[i % len(batches)]
        loss = forward(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    def fwd_step(i: int) -> float:
        x, y = batches[i % len(batches)]
        with torch.no_grad():
            return forward(x, y).item()

    def measure(step, warmup: int, steps: int, seconds: float):
        first = None
        for i in range(warmup):
            t0 = time.perf_counter()
            step(i)
            if first is None:
                first = time.perf_counter() - t0
        times, loss, i = [], float("nan"), 0
        t_start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            loss = step(i)
            times.append(time.perf_counter() - t0)
            i += 1
            if steps > 0:
                if i >= steps:
                    break
            elif i >= 3 and time.perf_counter() - t_start >= seconds:
                break
        return times, loss, first

    train_times, loss, first_train = measure(train_step, a.warmup, a.steps, a.seconds)
    model.eval()
    fwd_times, _, first_fwd = measure(fwd_step, a.warmup, a.steps, a.seconds / 3)
    model.train()

    tok = B * T
    mean_ms = 1e3 * sum(train_times) / len(train_times)
    fwd_ms = 1e3 * sum(fwd_times) / len(fwd_times)
    out = {
        "impl": "pytorch", "torch": torch.__version__, "mode": a.mode, "precision": a.precision, "config": a.config, **c,
        "vocab_size": VOCAB, "params": sum(p.numel() for p in model.parameters()),
        "torch_threads": a.torch_threads, "openblas_threads": int(os.environ.get("OPENBLAS_NUM_THREADS", "0")),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"), "torch_blas": _torch_blas(torch),
        "warmup_steps": a.warmup, "steps": len(train_times),
        "ms_per_step": round(mean_ms, 3), "ms_per_step_median": round(1e3 * statistics.median(train_times), 3),
        "tokens_per_s": round(tok / (mean_ms / 1e3), 1),
        "fwd_steps": len(fwd_times), "fwd_ms": round(fwd_ms, 3), "fwd_tokens_per_s": round(tok / (fwd_ms / 1e3), 1),
        "peak_rss_mb": round(_maxrss_mb(), 1), "base_rss_mb": round(base_rss, 1), "final_loss": round(loss, 4),
        # 1-minute load average before and after: other work on the machine skews the timings
        "loadavg_before": round(load_before, 2), "loadavg_after": round(os.getloadavg()[0], 2),
    }
    if a.mode == "compile":
        out["compile_s"] = round(first_train, 2)
        out["compile_fwd_s"] = round(first_fwd, 2)
    return out


def attention_worker(a: argparse.Namespace) -> dict:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(a.torch_threads)
    torch.manual_seed(1337)
    B, H, hd, T = 4, 4, 32, a.len
    E = H * hd
    base_rss = _maxrss_mb()

    def median_ms(step) -> tuple[float, int]:
        for _ in range(a.warmup):
            step()
        times, t_start = [], time.perf_counter()
        while len(times) < 3 or (time.perf_counter() - t_start < a.seconds and (a.steps <= 0 or len(times) < a.steps)):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times), len(times)

    q, k, v = (torch.randn(B, H, T, hd, requires_grad=True) for _ in range(3))

    def sdpa_step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    x = torch.randn(B, T, E, requires_grad=True)
    w_in, b_in = torch.randn(3 * E, E, requires_grad=True), torch.zeros(3 * E, requires_grad=True)
    w_out, b_out = torch.randn(E, E, requires_grad=True), torch.zeros(E, requires_grad=True)

    def mha_step():
        qh, kh, vh = (t.view(B, T, H, hd).transpose(1, 2) for t in F.linear(x, w_in, b_in).split(E, dim=2))
        ctx = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True).transpose(1, 2).reshape(B, T, E)
        F.linear(ctx, w_out, b_out).sum().backward()

    load_before = os.getloadavg()[0]
    sdpa_ms, sdpa_steps = median_ms(sdpa_step)
    sdpa_rss = _maxrss_mb()
    mha_ms, mha_steps = median_ms(mha_step)
    return {"impl": "pytorch", "bench": "attention", "torch": torch.__version__, "len": T, "batch": B, "heads": H,
            "head_dim": hd, "torch_threads": a.torch_threads, "sdpa_ms": round(sdpa_ms, 3), "sdpa_steps": sdpa_steps,
            "mha_ms": round(mha_ms, 3), "mha_steps": mha_steps, "sdpa_peak_rss_mb": round(sdpa_rss, 1),
            "peak_rss_mb": round(_maxrss_mb(), 1), "base_rss_mb": round(base_rss, 1),
            "loadavg_before": round(load_before, 2), "loadavg_after": round(os.getloadavg()[0], 2)}
def decode_step(model, idx, pos0: int, cache):
    """Logits (B, V) of the last of the new positions idx (B, T), which start at pos0, with the
    keys and values of positions < pos0 in cache (a list of per-layer (K, V), each
    (B, H, block, hd)); writes the new ones there. A prefill (T > 1) starts at position 0."""
    import torch
    import torch.nn.functional as F
    B, T = idx.shape
    E, H = model.cfg.n_embd, model.cfg.n_head
    hd = E // H
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(pos0, pos0 + T))  # (B, T, E)
    for blk, (K, V) in zip(model.blocks, cache):
        a = blk.attn
        qkv = F.linear(blk.ln1(x), a.in_proj_weight, a.in_proj_bias)  # (B, T, 3E)
        q, k, v = qkv.view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)       # each (B, H, T, hd)
        K[:, :, pos0:pos0 + T] = k
        V[:, :, pos0:pos0 + T] = v
        assert T == 1 or pos0 == 0, "a prefill starts the window"
        ctx = F.scaled_dot_product_attention(q, K[:, :, :pos0 + T], V[:, :, :pos0 + T], is_causal=T > 1)
        x = x + a.out_proj(ctx.transpose(1, 2).reshape(B, T, E))
        x = x + blk.mlp(blk.ln2(x))
    return F.linear(model.ln_f(x[:, -1]), model.tok_emb.weight)  # (B, V), tied head


def generate_cached(model, prompts, n_new: int, gen):
    """attograd's TransformerLM::generate_batch at temperature 1: (B, len) prompts -> (B, len + n_new)."""
    import torch
    c = model.cfg
    B = prompts.shape[0]
    hd = c.n_embd // c.n_head
    cache = [(torch.empty(B, c.n_head, c.block_size, hd), torch.empty(B, c.n_head, c.block_size, hd))
             for _ in range(c.n_layer)]
    seq = prompts
    keep = max(1, c.block_size // 2)
    start = max(0, seq.shape[1] - c.block_size)
    cached = 0
    for _ in range(n_new):
        end = seq.shape[1]
        if end - start > c.block_size:  # window full: restart from the last `keep` tokens
            start, cached = end - keep, 0
        logits = decode_step(model, seq[:, start + cached:end], cached, cache)
        cached = end - start
        nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)  # (B, 1)
        seq = torch.cat([seq, nxt], dim=1)
    return seq


def decode_worker(a: argparse.Namespace) -> list:
    torch, cfg, model = twin_model(a)
    c = CONFIGS[a.config]
    model = model.eval()
    gen = torch.Generator().manual_seed(0)
    out = []
    with torch.inference_mode():
        # The cache is the same math as the twin's forward: logits at every position of a prefix.
        B, L = 2, min(12, cfg.block_size)
        idx = torch.randint(0, VOCAB, (B, L), generator=gen)
        hd = cfg.n_embd // cfg.n_head
        cache = [(torch.empty(B, cfg.n_head, cfg.block_size, hd), torch.empty(B, cfg.n_head, cfg.block_size, hd))
                 for _ in range(cfg.n_layer)]
        full = model(idx)
        got = [decode_step(model, idx[:, :4], 0, cache)] + [decode_step(model, idx[:, t:t + 1], t, cache)
                                                            for t in range(4, L)]
        err = max((g - full[:, t]).abs().max().item() for g, t in zip(got, range(3, L)))
        if err > 1e-4:
            raise SystemExit(f"decode_step differs from the twin's forward by {err}")
        for batch in (int(b) for b in a.decode_batches.split(",")):
            prompts = torch.zeros(batch, 1, dtype=torch.int64)
            generate_cached(model, prompts, 8, gen)  # warm-up
            secs = []
            for _ in range(3):
                t0 = time.perf_counter()
                generate_cached(model, prompts, a.decode_tokens, gen)
                secs.append(time.perf_counter() - t0)
            sec = statistics.median(secs)
            out.append({"impl": "pytorch", "bench": "sample", "torch": torch.__version__, "mode": "eager",
                        "config": a.config, "batch": batch, "tokens": a.decode_tokens, "torch_threads": a.torch_threads,
                        "openblas_threads": int(os.environ.get("OPENBLAS_NUM_THREADS", "0")),
                        "ms_per_step": round(1e3 * sec / a.decode_tokens, 3),
                        "tokens_per_s": round(batch * a.decode_tokens / sec, 1), "cache_check_max_abs": err,
                        "loadavg": round(os.getloadavg()[0], 2)})
    return out


def torch_version(python: str) -> str:
    r = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{python} cannot import torch:\n{r.stderr.strip()}")
    return r.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="default,large", help="comma-separated: default, large")
    ap.add_argument("--steps", type=int, default=0,
                    help="timed training (and forward) steps per setting; 0 (default): as many as fit in "
                         "--seconds for training and a third of that for forward, at least 3")
    ap.add_argument("--seconds", type=float, default=7.0, help="time budget of the training measurement")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (compile: includes compilation)")
    ap.add_argument("--threads", default=THREAD_SETTINGS,
                    help=f"TORCHxOPENBLAS thread settings, comma-separated (default {THREAD_SETTINGS})")
    ap.add_argument("--modes", default="auto", help="eager, compile, or auto (eager, plus compile with torch >= 2)")
    ap.add_argument("--openblas-coretype", default="inherit",
                    help="OPENBLAS_CORETYPE for the workers: inherit (default), none (unset), or a value")
    ap.add_argument("--precisions", default="fp32", help="comma-separated: fp32, bf16 (torch.autocast(\"cpu\", torch.bfloat16))")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 warm-up step and 2 timed steps per setting")
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch for the workers")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--attention", action="store_true",
                    help="causal attention forward + backward (F.scaled_dot_product_attention) instead of the models")
    ap.add_argument("--lens", default="64,128,256,512,1024,2048", help="--attention: sequence lengths")
    ap.add_argument("--decode", action="store_true",
                    help="measure KV-cache decoding instead of training (eager, torch threads 1 and 2)")
    ap.add_argument("--decode-tokens", type=int, default=500, help="decode: new tokens per run")
    ap.add_argument("--decode-batches", default="1,8", help="decode: comma-separated batch sizes")
    # worker-only
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--len", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    ap.add_argument("--torch-threads", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.steps, a.warmup = 2, 1

    if a.worker:
        if a.attention:
            print(json.dumps(attention_worker(a)), flush=True)
        else:
            for rec in decode_worker(a) if a.decode else [worker(a)]:
                print(json.dumps(rec), flush=True)
        return 0
    if a.attention:
        return attention_main(a)
    if a.decode:
        a.modes = "eager"
        if a.threads == THREAD_SETTINGS:
            a.threads = "1x1,2x1"
        if a.quick:
            a.decode_tokens = 50

    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c!r} (known: {', '.join(CONFIGS)})")
    settings = []
    for s in a.threads.split(","):
        t, _, b = s.strip().partition("x")
        settings.append((int(t), int(b)))
    version = torch_version(a.python)
    major = int(version.split(".")[0])
    modes = ["eager"] + (["compile"] if major >= 2 else []) if a.modes == "auto" else a.modes.split(",")
    if "compile" in modes and major < 2:
        print(f"torch {version} has no torch.compile; skipping mode compile", file=sys.stderr)
        modes = [m for m in modes if m != "compile"]

    env = dict(os.environ)
    if a.openblas_coretype == "none":
        env.pop("OPENBLAS_CORETYPE", None)
    elif a.openblas_coretype != "inherit":
        env["OPENBLAS_CORETYPE"] = a.openblas_coretype
    out_file = open(a.out, "a") if a.out else None
    failures = 0
    precisions = [p.strip() for p in a.precisions.split(",") if p.strip()]
    for p in precisions:
        if p not in ("fp32", "bf16"):
            ap.error(f"unknown precision {p!r} (known: fp32, bf16)")
    if a.decode:
        precisions = ["fp32"]
    for config, precision, mode, (t, b) in [(c, p, m, s) for c in configs for p in precisions for m in modes
                                             for s in settings]:
            if True:
                cmd = [a.python, os.path.abspath(__file__), "--worker", "--config", config, "--mode", mode,
                       "--precision", precision,
                       "--torch-threads", str(t), "--steps", str(a.steps), "--seconds", str(a.seconds),
                       "--warmup", str(a.warmup)]
                if a.decode:
                    cmd += ["--decode", "--decode-tokens", str(a.decode_tokens), "--decode-batches", a.decode_batches]
                wenv = dict(env, OPENBLAS_NUM_THREADS=str(b))
                r = subprocess.run(cmd, env=wenv, capture_output=True, text=True)
                lines = [ln for ln in r.stdout.strip().splitlines() if ln.startswith("{")]
                if r.returncode != 0 or not lines:
                    failures += 1
                    lines = [json.dumps({"impl": "pytorch", "torch": version, "mode": mode, "config": config,
                                         "precision": precision,
                                         "torch_threads": t, "openblas_threads": b,
                                         "error": (r.stderr.strip().splitlines() or ["no output"])[-1]})]
                elif not a.decode:
                    lines = lines[-1:]
                for line in lines:
                    print(line, flush=True)
                    if out_file:
                        out_file.write(line + "\n")
                        out_file.flush()
    return 1 if failures else 0


def attention_main(a: argparse.Namespace) -> int:
    """One worker per length and torch thread count (1, 2), as the models' runs."""
    failures = 0
    out_file = open(a.out, "a") if a.out else None
    seconds = 1.0 if a.quick else min(a.seconds, 3.0)
    for T in [int(t) for t in a.lens.split(",") if t.strip()]:
        for threads in sorted({int(s.strip().partition("x")[0]) for s in a.threads.split(",")}):
            cmd = [a.python, os.path.abspath(__file__), "--worker", "--attention", "--len", str(T),
                   "--torch-threads", str(threads), "--steps", str(a.steps), "--seconds", str(seconds),
                   "--warmup", str(a.warmup)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            lines = r.stdout.strip().splitlines()
            if r.returncode != 0 or not lines:
                failures += 1
                line = json.dumps({"impl": "pytorch", "bench": "attention", "len": T, "torch_threads": threads,
                                   "error": (r.stderr.strip().splitlines() or ["no output"])[-1]})
            else:
                line = lines[-1]
            print(line, flush=True)
            if out_file:
                out_file.write(line + "\n")
                out_file.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
