#!/usr/bin/env python3
"""The Python front's costs, one measurement per process, one JSON line each (bench/compare.py
runs it for `make bench`, alternating the sides):

  --what ops        a loop of small tensor ops (5 per iteration: add, mul, tanh, matmul, sum on
                    (8, 8) tensors), the same source for attograd and torch (--module), on one thread;
  --what ops_grad   the same loop on tensors that require grad, with a backward every iteration;
  --what train_step one training step of the default model (the GPT `attograd bench train --config
                    default` times: 4 layers, 128 wide, block 64, batch 12, AdamW with the trainer's
                    groups, clipping at 1.0) driven from Python: model.loss, backward, clip_grad_norm_,
                    optimizer.step, as a PyTorch user writes it, on the GEMM provider the command's
                    --gemm auto chooses (attograd.backends); --threads as the command's;
  --what threads    the GIL: GEMM work (--gemms products of 384x384 matrices) on one Python thread,
                    then the same work on each of two threads at once, attograd's pool at one thread
                    so that each Python thread is one core's worth; prints both wall times, and the
                    same ratio for a control that CPython runs without the GIL (hashlib).

Run with the interpreter that has the module: the build's venv (PYTHONPATH=build/python) for
attograd, a Python with torch for torch.
"""

import argparse
import hashlib
import importlib
import json
import threading
import time


def small_ops(T, n_ops, grad):
    T.manual_seed(0)
    a = T.randn(8, 8, requires_grad=grad)
    b = T.randn(8, 8)
    m = T.randn(8, 8)
    iters = n_ops // (6 if grad else 5)
    t0 = time.perf_counter()
    for _ in range(iters):
        y = a + b
        y = y * 0.5
        y = y.tanh()
        y = y @ m
        s = y.sum()
        if grad:
            s.backward()  # the 6th op of the iteration
    dt = time.perf_counter() - t0
    return {"ops": iters * (6 if grad else 5), "seconds": dt, "us_per_op": 1e6 * dt / (iters * (6 if grad else 5))}


def one_and_two_threads(work):
    """Wall time of work() on one thread, then of work() on each of two threads at once."""
    work()  # warm up (buffers, page faults)
    t0 = time.perf_counter()
    work()
    one = time.perf_counter() - t0
    threads = [threading.Thread(target=work) for _ in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return one, time.perf_counter() - t0


def gemm_threads(T, gemms):
    T.manual_seed(0)
    a = T.randn(384, 384)

    def work():
        for _ in range(gemms):
            a @ a

    one, two = one_and_two_threads(work)
    # The control: work that CPython itself runs without the GIL (hashing a large buffer), about
    # as long. Its ratio is what the machine gives two threads now: near 1 on two free cores,
    # near 2 when other processes leave this one a single core's worth.
    data = b"attograd" * (1 << 20)
    rounds = max(1, round(one / 0.02))

    def control():
        for _ in range(rounds):
            hashlib.sha256(data).digest()

    c_one, c_two = one_and_two_threads(control)
    return {"gemms": gemms, "one_thread_s": one, "two_threads_s": two, "ratio": two / one,
            "control_ratio": c_two / c_one}


def train_step(T, seconds, max_steps):
    """ms per step of the default model's training step written in Python (attograd only)."""
    model = T.models.make(_VOCAB, name="gpt", seed=1337, n_layer=4, n_head=4, n_embd=128, block_size=64)
    model.train()
    # The command resolves --gemm auto before its step; the Python loop chooses the same way.
    gemm_how = T.backends.set_gemm_provider("auto", model=model, tokens=12 * 64)
    T.manual_seed(1337)
    x = T.randint(0, 65, (12, 64))
    y = T.randint(0, 65, (12, 64))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = T.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-4, betas=(0.9, 0.99), eps=1e-8)
    params = list(model.parameters())

    def step():
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        T.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    for _ in range(3):
        step()  # warm up, as the command does
    steps, t0 = 0, time.perf_counter()
    while steps < max_steps and (steps < 3 or time.perf_counter() - t0 < seconds):
        step()
        steps += 1
    dt = (time.perf_counter() - t0) / steps
    return {"config": "default", "steps": steps, "ms_per_step": dt * 1e3, "tokens_per_s": 12 * 64 / dt,
            "gemm": T.backends.get_gemm_provider(), "gemm_chosen": gemm_how}


_VOCAB = [chr(c) for c in range(32, 97)]  # 65 characters, as tiny shakespeare's vocabulary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", default="attograd", choices=["attograd", "torch"])
    ap.add_argument("--what", default="ops", choices=["ops", "ops_grad", "threads", "train_step"])
    ap.add_argument("--threads", type=int, default=1, help="train_step: attograd's threads")
    ap.add_argument("--seconds", type=float, default=8.0, help="train_step: measuring time")
    ap.add_argument("--max-steps", type=int, default=1_000_000)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--gemms", type=int, default=200)
    a = ap.parse_args()
    T = importlib.import_module(a.module)
    T.set_num_threads(a.threads if a.what == "train_step" else 1)
    rec = {"bench": "python_" + a.what, "side": a.module, "version": getattr(T, "__version__", "?")}
    if a.what == "train_step":
        rec.update(train_step(T, a.seconds, a.max_steps), threads=a.threads)
    elif a.what == "threads":
        rec.update(gemm_threads(T, a.gemms))
    else:
        small_ops(T, min(a.ops, 5000), a.what == "ops_grad")  # warm up
        rec.update(small_ops(T, a.ops, a.what == "ops_grad"))
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
