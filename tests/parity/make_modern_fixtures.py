#!/usr/bin/env python3
"""Generate the fixtures of tests/models/test_modern_parity.cpp (tests/parity/fixtures/modern/).

    /work/venv-torch/bin/python tests/parity/make_modern_fixtures.py [--out DIR]

Everything in float64, computed by PyTorch:

* ops.safetensors: the new ops on x (2, 3, 5, 8) and their gradients for an upstream g:
  F.rms_norm with a weight and eps 1e-5 (`rms_w`, `rms_w.dx`, `rms_w.dw`) and without either
  (eps: torch's default, the dtype's machine epsilon; `rms`, `rms.dx`); rotary embeddings at
  offset 3 as the twin applies them (`rope3`, `rope3.dx`); the soft-cap 2·tanh(x/2)
  (`softcap2`, `softcap2.dx`).
* model.safetensors: the twin of `attograd train --model modern` (bench/torch_speedrun.py's
  ModernLM: vocab 23, 2 layers, 2 heads, 16 wide, block 8, soft-cap 3) with random weights
  `param.<name>` (none zero: the init's zeros would hide the blocks), ids `idx` and `targets`
  (2, 8), the logits, the loss and the gradient `grad.<name>` of every parameter.
* parts4.safetensors, parts5.safetensors: the same with modded-nanogpt's parts on (`--value-embeds`,
  `--unet-skips`, `--x0-residual`): 4 layers with 1 value table (layers 0 and 3) and 5 layers with
  2 (layers 0, 1 and 3, 4; the middle block 2 without a table or a skip), U-net skips in both, the
  x0 residual in the second; the same keys, and `value_embeds`, `unet_skips`, `x0_residual`
  (int64 0-d) for the test to build the model.
"""

from __future__ import annotations

import argparse
import os
import sys
import types

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import safetensors_io  # noqa: E402
import torch_speedrun as twin  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "modern")
F64 = torch.float64


def write_ops(out):
    g = torch.Generator().manual_seed(21)
    x = torch.randn(2, 3, 5, 8, generator=g, dtype=F64)
    up = torch.randn(2, 3, 5, 8, generator=g, dtype=F64)
    w = torch.randn(8, generator=g, dtype=F64)
    t = {"x": x, "g": up, "w": w}

    def with_grads(name, f, inputs):
        leaves = [i.clone().requires_grad_() for i in inputs]
        y = f(*leaves)
        grads = torch.autograd.grad(y, leaves, up)
        t[name] = y.detach()
        for suffix, gr in zip(["dx", "dw"], grads):
            t[f"{name}.{suffix}"] = gr

    with_grads("rms_w", lambda a, b: F.rms_norm(a, (8,), b, eps=1e-5), [x, w])
    with_grads("rms", lambda a: F.rms_norm(a, (8,)), [x])
    cos, sin = twin.rope_tables(5, 8, 10000.0, offset=3, dtype=F64)
    with_grads("rope3", lambda a: twin.apply_rope(a, cos, sin), [x])
    with_grads("softcap2", lambda a: 2.0 * torch.tanh(a / 2.0), [x])
    safetensors_io.save_file(t, os.path.join(out, "ops.safetensors"), {"torch_version": torch.__version__})


def write_model(out, name="model", layers=2, value_embeds=0, unet_skips=False, x0_residual=False):
    c = types.SimpleNamespace(layers=layers, heads=2, embd=16, mlp_ratio=4, qk_norm=True, norm_gain=False,
                              rope_base=10000.0, softcap=3.0, value_embeds=value_embeds, unet_skips=unet_skips,
                              x0_residual=x0_residual)
    torch.manual_seed(0)
    model = twin.ModernLM(c, 23).to(F64)
    g = torch.Generator().manual_seed(22)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=F64) * (0.3 if p.dim() == 2 else 0.1))
    idx = torch.randint(0, 23, (2, 8), generator=g)
    targets = torch.randint(0, 23, (2, 8), generator=g)
    logits = model(idx)
    loss = model(idx, targets)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, list(model.parameters()))
    t = {"idx": idx, "targets": targets, "logits": logits.detach(), "loss": loss.detach().reshape(())}
    if value_embeds or unet_skips:
        t["value_embeds"] = torch.tensor(value_embeds, dtype=torch.int64)
        t["unet_skips"] = torch.tensor(int(unet_skips), dtype=torch.int64)
        t["x0_residual"] = torch.tensor(int(x0_residual), dtype=torch.int64)
    for n, p, gr in zip(names, model.parameters(), grads):
        t[f"param.{n}"] = p.detach().clone()
        t[f"grad.{n}"] = gr
    safetensors_io.save_file(t, os.path.join(out, name + ".safetensors"), {"torch_version": torch.__version__})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    write_ops(a.out)
    write_model(a.out)
    write_model(a.out, "parts4", layers=4, value_embeds=1, unet_skips=True)
    write_model(a.out, "parts5", layers=5, value_embeds=2, unet_skips=True, x0_residual=True)
    print(f"wrote ops.safetensors, model.safetensors, parts4.safetensors and parts5.safetensors to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
