"""Makes the fixtures of the learner programs (python/tests/programs/): runs each with PyTorch and
keeps what torch drew (the initial weights, the batch positions, makemore's split) and what the
program computed (losses, gradients or their norms, logits, final weights, generated tokens, the
lines it printed).
test_programs.py runs the same programs on attograd with torch's draws and compares. Run by
make_fixtures.py, or alone:

    /path/to/venv-with-torch/bin/python python/tests/make_program_fixtures.py
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import (Log, Record, lecture_bigram, lecture_gpt, makemore, mingpt, nanogpt,  # noqa: E402
                      tutorial_polynomials)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
SAMPLE_TOKENS = 24  # generated with multinomial after torch.manual_seed(1337)


def _state(prefix, state, store):
    for k, v in state.items():
        store[f"{prefix}/{k}"] = v.detach().numpy()


def _run_lm(name, program, store, tables, seed=1337, **kwargs):
    torch.manual_seed(seed)
    draws, log = Record(), Log()
    out = program(torch, draws, log, sample_tokens=SAMPLE_TOKENS, **kwargs)
    _state(f"{name}/initial", out["initial"], store)
    _state(f"{name}/final", out["model"].state_dict(), store)
    for key in ("last_logits", "cropped_logits"):
        if key in out:
            store[f"{name}/{key}"] = out[key].detach().numpy()
    entry = {"draws": draws.draws, "log": list(log), "kwargs": kwargs}
    for key in ("losses", "estimates", "norms", "lrs", "greedy", "decay_groups", "num_params", "mfu", "sample"):
        if key in out:
            entry[key] = out[key]
    tables[name] = entry


def _run_makemore(name, store, tables, seed=1337, **kwargs):
    # the seed before the split's randperm, as makemore seeds before making its datasets
    torch.manual_seed(seed)
    draws, log = Record(), Log()
    out = makemore.program(torch, draws, log, **kwargs)
    _state(f"{name}/initial", out["initial"], store)
    _state(f"{name}/final", out["model"].state_dict(), store)
    _state(f"{name}/first_grads", out["first_grads"], store)
    entry = {"draws": draws.draws, "log": list(log), "kwargs": kwargs, "seed": seed}
    for key in ("losses", "evaluations", "split", "greedy", "sample"):
        entry[key] = out[key]
    tables[name] = entry


def _tutorials(store, tables):
    T = torch
    entry = {}
    torch.manual_seed(0)
    start = [torch.randn(()).item() for _ in range(4)]
    log = Log()
    entry["autograd_by_hand"] = {"start": start, "result": tutorial_polynomials.autograd_by_hand(T, log, start),
                                 "log": list(log)}
    log = Log()
    entry["custom_function"] = {"result": tutorial_polynomials.custom_function(T, log), "log": list(log)}
    for name, make, run in [
        ("nn_by_hand", lambda: tutorial_polynomials._linear_cubic(T), tutorial_polynomials.nn_by_hand),
        ("nn_with_optim", lambda: tutorial_polynomials._linear_cubic(T), tutorial_polynomials.nn_with_optim),
        ("module", lambda: tutorial_polynomials._cubic_module(T)(), tutorial_polynomials.module),
    ]:
        torch.manual_seed(0)
        init = {k: v.clone() for k, v in make().state_dict().items()}
        _state(f"tutorial/{name}", init, store)
        log = Log()
        entry[name] = {"result": run(T, log, init), "log": list(log)}
    torch.manual_seed(0)
    init = {f"c{k}": T.randn(()) for k in range(5)}  # as the dynamic net draws its coefficients
    _state("tutorial/dynamic_net", init, store)
    log = Log()
    entry["dynamic_net"] = {"result": tutorial_polynomials.dynamic_net(T, log, init), "log": list(log)}
    tables["tutorial"] = entry


def make():
    torch.set_default_dtype(torch.float32)
    store, tables = {}, {"torch": torch.__version__}
    _run_lm("bigram", lecture_bigram.program, store, tables)
    _run_lm("gpt", lecture_gpt.program, store, tables)
    _run_lm("nanogpt", nanogpt.program, store, tables, top_k=5)
    _run_lm("nanogpt_manual_attention", nanogpt.program, store, tables, fast_attention=False, bias=False)
    _run_lm("mingpt", mingpt.program, store, tables)
    _run_makemore("makemore_mlp", store, tables, kind="mlp", temperature=0.8, top_k=5, num_samples=8)
    _run_makemore("makemore_bigram", store, tables, kind="bigram", learning_rate=5e-2, num_samples=8)
    _tutorials(store, tables)
    np.savez_compressed(os.path.join(OUT, "programs.npz"), **store)
    with open(os.path.join(OUT, "programs.json"), "w") as f:
        json.dump(tables, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make()
    print(f"program fixtures written to {OUT} with torch {torch.__version__}")
