#!/usr/bin/env python3
"""Generate the fixtures of tests/optim/test_muon.cpp (tests/parity/fixtures/muon/): torch.optim.Muon.

    /work/venv-torch/bin/python tests/parity/make_muon_fixtures.py [--out DIR]

torch.optim.Muon (torch >= 2.9) casts each update to bfloat16 before its Newton-Schulz
iteration (a choice for GPU speed); attograd iterates in the parameter's dtype. So:

* <case>.safetensors for the float64 cases: torch.optim.Muon itself, stepping float64
  parameters, with one change: its _zeropower_via_newtonschulz is replaced by a copy that does
  not cast to bfloat16 (printed below: the same lines otherwise). Holds the initial parameters
  `param.<i>`, the gradient of each step `grad.<s>.<i>`, the parameters after each step
  `after.<s>.<i>`, and the final state `state.<i>.momentum_buffer`.
* torch_bf16.safetensors: torch.optim.Muon unchanged, on float32 parameters: attograd's float32
  update must agree with it to within bfloat16's rounding.

Three parameters: wide (4, 6), tall (7, 3) (the iteration then runs on the transpose) and
square (5, 5). Random values are seeded from a CRC32 of the case's name.
"""

from __future__ import annotations

import argparse
import os
import sys
import zlib

import torch
import torch.optim._muon as muon_mod

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "muon")
STEPS = 5
SHAPES = [(4, 6), (7, 3), (5, 5)]


def zeropower_same_dtype(grad, ns_coefficients, ns_steps, eps):
    """torch's _zeropower_via_newtonschulz without `.to(dtype=torch.bfloat16)`."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    a, b, c = ns_coefficients
    ortho_grad = grad.clone()
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    ortho_grad.div_(ortho_grad.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        gram_update = torch.addmm(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c)
        ortho_grad = torch.addmm(ortho_grad, gram_update, ortho_grad, beta=a)
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    return ortho_grad


def cases():
    """name -> make(params) -> optimizer; the float64 ones."""
    Muon = torch.optim.Muon
    return {
        "defaults": lambda p: Muon(p),
        "speedrun": lambda p: Muon(p, lr=0.02, weight_decay=0.0, momentum=0.95),
        "no_nesterov_match_rms": lambda p: Muon(p, lr=0.01, weight_decay=0.05, momentum=0.9, nesterov=False,
                                                adjust_lr_fn="match_rms_adamw"),
        "spectral_three_steps": lambda p: Muon(p, lr=0.03, momentum=0.5, ns_steps=3, adjust_lr_fn="spectral_unclamped"),
        "groups": lambda p: Muon([{"params": [p[0], p[1]], "lr": 0.02}, {"params": [p[2]], "lr": 0.005,
                                                                          "weight_decay": 0.0}]),
    }


def run(name, make, dtype):
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    params = [torch.randn(s, generator=g, dtype=dtype).requires_grad_() for s in SHAPES]
    tensors = {f"param.{i}": p.detach().clone() for i, p in enumerate(params)}
    opt = make(params)
    for s in range(STEPS):
        opt.zero_grad()
        for i, p in enumerate(params):
            p.grad = torch.randn(p.shape, generator=g, dtype=dtype)
            tensors[f"grad.{s}.{i}"] = p.grad.clone()
        opt.step()
        for i, p in enumerate(params):
            tensors[f"after.{s}.{i}"] = p.detach().clone()
    for i, st in opt.state_dict()["state"].items():
        tensors[f"state.{i}.momentum_buffer"] = st["momentum_buffer"].detach().clone()
    return tensors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    meta = {"steps": str(STEPS), "torch_version": torch.__version__}
    original = muon_mod._zeropower_via_newtonschulz
    muon_mod._zeropower_via_newtonschulz = zeropower_same_dtype
    try:
        for name, make in cases().items():
            safetensors_io.save_file(run(name, make, torch.float64), os.path.join(a.out, f"{name}.safetensors"),
                                     {"case": name, **meta})
    finally:
        muon_mod._zeropower_via_newtonschulz = original
    bf16 = run("torch_bf16", lambda p: torch.optim.Muon(p, lr=0.02), torch.float32)
    safetensors_io.save_file(bf16, os.path.join(a.out, "torch_bf16.safetensors"), {"case": "torch_bf16", **meta})
    print(f"wrote {len(cases()) + 1} cases to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
