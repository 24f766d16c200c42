#!/usr/bin/env python3
"""Generate the fixtures of tests/optim/test_optim_parity.cpp and tests/nn/test_nn.cpp (tests/parity/fixtures/nn_optim/).

    /work/venv-torch/bin/python tests/parity/make_nn_optim_fixtures.py [--out DIR]

Writes, each computed by PyTorch in float64:

* <case>.safetensors for each optimizer case (SGD, Adam, AdamW): the initial parameters
  `param.<i>`, the gradient of each step `grad.<s>.<i>` (absent: that parameter has no .grad at
  step s), the parameters after each step `after.<s>.<i>`, and the final state
  `state.<i>.<key>` (torch's optimizer.state_dict()["state"], the step as a float32 0-d tensor).
  __metadata__: case, steps, torch_version.
* clip.safetensors: gradients `grad.<i>`, and for each clipping case the gradients after it
  `<case>.<i>` and, for clip_grad_norm_, the norm it returned `<case>.norm` (0-d).
* schedulers.json: for each scheduler case, the optimizer's lrs (two parameter groups) after
  the construction and after each of `steps` calls of opt.step(); sched.step().
* modules.safetensors and modules.json: a Sequential of every new module kind (weights,
  an input and torch's output), its state_dict keys, and the messages of load_state_dict for a
  missing key, an unexpected key, a size mismatch and all three. torch prints a shape as
  torch.Size([8, 2]), attograd as [8, 2]: the messages are stored with that one change.

The C++ test knows each case by its name and builds the same optimizer or scheduler; both
sides list the same names. Random values are seeded from a CRC32 of the case's name.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import sys
import zlib

import torch
from torch import nn
from torch.optim import SGD, Adam, AdamW
from torch.optim import lr_scheduler as sch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "nn_optim")
F64 = torch.float64
STEPS = 5
# Three parameters: a matrix, a vector, and an odd length (the scalar tail of torch's kernels).
SHAPES = [(4, 6), (8,), (5,)]


def optimizer_cases():
    """name -> (make(params) -> optimizer, {step: [indices without a gradient]})."""
    return {
        "sgd_defaults": (lambda p: SGD(p), {}),
        "sgd_plain": (lambda p: SGD(p, lr=0.1), {}),
        "sgd_momentum": (lambda p: SGD(p, lr=0.05, momentum=0.9), {}),
        "sgd_dampening_weight_decay": (lambda p: SGD(p, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01), {}),
        "sgd_nesterov_weight_decay": (lambda p: SGD(p, lr=0.05, momentum=0.8, weight_decay=0.1, nesterov=True), {}),
        "adam_defaults": (lambda p: Adam(p), {}),
        "adam_weight_decay_amsgrad": (
            lambda p: Adam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True), {}),
        "adam_small_betas": (lambda p: Adam(p, lr=0.02, betas=(0.3, 0.5)), {}),  # lerp weight ≥ 0.5
        "adamw_defaults": (lambda p: AdamW(p), {}),  # decays the vectors too
        "adamw_groups": (
            lambda p: AdamW([{"params": [p[0]], "lr": 0.02, "betas": (0.9, 0.95), "weight_decay": 0.1},
                             {"params": [p[1], p[2]], "lr": 0.01, "betas": (0.9, 0.95), "weight_decay": 0.0}]), {}),
        "adamw_amsgrad_missing_grad": (lambda p: AdamW(p, lr=0.01, amsgrad=True), {1: [1], 3: [1, 2]}),
        "sgd_momentum_missing_grad": (lambda p: SGD(p, lr=0.05, momentum=0.9), {0: [2], 2: [0]}),
    }


def write_optimizer_cases(out):
    for name, (make, missing) in optimizer_cases().items():
        g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        params = [torch.randn(s, generator=g, dtype=F64).requires_grad_() for s in SHAPES]
        tensors = {f"param.{i}": p.detach().clone() for i, p in enumerate(params)}
        opt = make(params)
        for s in range(STEPS):
            opt.zero_grad()
            for i, p in enumerate(params):
                grad = torch.randn(p.shape, generator=g, dtype=F64)
                if i in missing.get(s, []):
                    continue
                p.grad = grad
                tensors[f"grad.{s}.{i}"] = grad.clone()
            opt.step()
            for i, p in enumerate(params):
                tensors[f"after.{s}.{i}"] = p.detach().clone()
        for i, st in opt.state_dict()["state"].items():
            for k, v in st.items():
                if v is not None:
                    tensors[f"state.{i}.{k}"] = v.detach().clone()
        safetensors_io.save_file(tensors, os.path.join(out, f"{name}.safetensors"),
                                 {"case": name, "steps": str(STEPS), "torch_version": torch.__version__})


def clip_cases():
    """name -> f(params) applying the clipping (returns the norm, or None)."""
    return {
        "norm2_clips": lambda p: nn.utils.clip_grad_norm_(p, 1.0),
        "norm2_below": lambda p: nn.utils.clip_grad_norm_(p, 100.0),
        "norm_inf": lambda p: nn.utils.clip_grad_norm_(p, 0.5, norm_type=math.inf),
        "norm1": lambda p: nn.utils.clip_grad_norm_(p, 2.0, norm_type=1.0),
        "norm3": lambda p: nn.utils.clip_grad_norm_(p, 2.0, norm_type=3.0),
        "value": lambda p: nn.utils.clip_grad_value_(p, 0.3),
    }


def write_clip(out):
    g = torch.Generator().manual_seed(zlib.crc32(b"clip"))
    grads = [torch.randn(s, generator=g, dtype=F64) for s in SHAPES]
    tensors = {f"grad.{i}": gr.clone() for i, gr in enumerate(grads)}
    for name, f in clip_cases().items():
        params = [torch.zeros(s, dtype=F64, requires_grad=True) for s in SHAPES]
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        norm = f(params)
        for i, p in enumerate(params):
            tensors[f"{name}.{i}"] = p.grad.clone()
        if norm is not None:
            tensors[f"{name}.norm"] = norm.detach().clone().reshape(())
    safetensors_io.save_file(tensors, os.path.join(out, "clip.safetensors"), {"torch_version": torch.__version__})


def scheduler_cases():
    """name -> (make(opt) -> scheduler, steps)."""
    def seq_warmup_cosine(o):
        return sch.SequentialLR(o, [sch.LinearLR(o, 0.1, 1.0, 3), sch.CosineAnnealingLR(o, 8, 1e-4)], [3])

    def seq_three(o):
        return sch.SequentialLR(o, [sch.LinearLR(o, 0.5, 1.0, 2), sch.StepLR(o, 2, 0.5),
                                    sch.LambdaLR(o, lambda e: 1.0 / (e + 1))], [2, 6])

    def seq_cosine_then_step(o):
        return sch.SequentialLR(o, [sch.CosineAnnealingLR(o, 4, 0.001), sch.StepLR(o, 3, 0.1)], [5])

    return {
        "step_lr": (lambda o: sch.StepLR(o, 3, 0.5), 12),
        "step_lr_default_gamma": (lambda o: sch.StepLR(o, 2), 6),
        "cosine": (lambda o: sch.CosineAnnealingLR(o, 10, 0.001), 35),
        "cosine_zero_min": (lambda o: sch.CosineAnnealingLR(o, 7), 20),
        "linear": (lambda o: sch.LinearLR(o, 0.25, 1.0, 4), 10),
        "linear_defaults": (lambda o: sch.LinearLR(o), 8),
        "linear_decay": (lambda o: sch.LinearLR(o, 1.0, 0.1, 6), 9),
        "lambda": (lambda o: sch.LambdaLR(o, lambda e: 0.95 ** e), 10),
        "lambda_per_group": (lambda o: sch.LambdaLR(o, [lambda e: 1.0 / (e + 1), lambda e: 0.5 ** e]), 6),
        "sequential_warmup_cosine": (seq_warmup_cosine, 15),
        "sequential_three": (seq_three, 12),
        "sequential_cosine_then_step": (seq_cosine_then_step, 12),
    }


def write_schedulers(out):
    cases = {}
    for name, (make, steps) in scheduler_cases().items():
        w, b = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
        opt = SGD([{"params": [w], "lr": 0.1}, {"params": [b], "lr": 0.02}])
        s = make(opt)
        lrs = [[float(g["lr"]) for g in opt.param_groups]]
        for _ in range(steps):
            opt.step()
            s.step()
            lrs.append([float(g["lr"]) for g in opt.param_groups])
        cases[name] = {"steps": steps, "lrs": lrs}
    with open(os.path.join(out, "schedulers.json"), "w") as f:
        # repr of a Python float reads back exactly (json writes the shortest round-trip text).
        json.dump({"torch_version": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")


def attograd_shapes(msg):
    return re.sub(r"torch\.Size\((\[[^\]]*\])\)", r"\1", msg)


def write_modules(out):
    torch.manual_seed(zlib.crc32(b"modules"))
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.Sigmoid(),
                          nn.Linear(8, 8), nn.SiLU(), nn.Identity(), nn.Linear(8, 2)).double()
    x = torch.randn(5, 3, dtype=F64)
    tensors = {f"model.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    tensors["x"] = x
    tensors["y"] = model(x).detach()
    safetensors_io.save_file(tensors, os.path.join(out, "modules.safetensors"), {"torch_version": torch.__version__})

    small = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))

    def message(sd):
        try:
            small.load_state_dict(sd)
        except RuntimeError as e:
            return attograd_shapes(str(e))
        raise AssertionError("load_state_dict accepted a bad state dict")

    good = small.state_dict()
    missing = {k: v for k, v in good.items() if k != "2.bias"}
    unexpected = dict(good, **{"5.weight": torch.zeros(3)})
    mismatch = dict(good, **{"0.weight": torch.zeros(8, 3)})
    everything = {k: v for k, v in mismatch.items() if k != "2.bias"}
    everything["5.weight"] = torch.zeros(3)
    doc = {
        "torch_version": torch.__version__,
        "keys": list(model.state_dict().keys()),
        "errors": {"missing": message(missing), "unexpected": message(unexpected), "mismatch": message(mismatch),
                   "all": message(everything)},
    }
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.safetensors")) + glob.glob(os.path.join(args.out, "*.json")):
        os.remove(old)
    write_optimizer_cases(args.out)
    write_clip(args.out)
    write_schedulers(args.out)
    write_modules(args.out)
    print(f"wrote {len(optimizer_cases())} optimizer cases, {len(clip_cases())} clipping cases, "
          f"{len(scheduler_cases())} scheduler cases and the module fixtures to {args.out}")


if __name__ == "__main__":
    main()
