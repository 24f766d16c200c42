#!/usr/bin/env python3
"""Generate the fixture of tests/train/test_schedule_parity.cpp (tests/parity/fixtures/schedules/).

    /work/venv-torch/bin/python tests/parity/make_schedule_fixtures.py [--out DIR]

The speedrun's schedules as its PyTorch twin (bench/torch_speedrun.py) runs them, in float64:
the twin's ModernLM (vocab 23, 2 layers, 2 heads, 16 wide, block 32, soft-cap 3) with random
weights, trained ITERS steps with Muon32 for the blocks' matrices and AdamW for the embedding
(at its own rate) and the head, weight decay 0.1 (the matrices, the embedding and the head, each
at its group's rate), WSD, gradient clipping, and the three warmups on at once: Muon's
momentum from 0.85 to 0.95 over 5 steps, the sequence length from 8 to 32 over 6 steps and the
batch from 2 to 4 over 4. Each step goes through the twin's own set_schedules, step_shape and
train_step. The batches are windows of a fixed token stream at starts drawn here (the two sides'
generators differ), so attograd can cut the same windows.

schedules.safetensors holds `stream` (the tokens), `starts` (ITERS, 4): each step's window starts
(a step of batch b takes the first b), the twin's `batch`, `block` and `momentum` of every step,
`loss` (ITERS,), the weights before (`param.<name>`) and after (`after.<name>`); its metadata the
recipe's values.
"""

from __future__ import annotations

import argparse
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import safetensors_io  # noqa: E402
import torch_speedrun as twin  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "schedules")
F64 = torch.float64
ITERS = 8
RECIPE = dict(layers=2, heads=2, embd=16, mlp_ratio=4, qk_norm=True, norm_gain=False, rope_base=10000.0, softcap=3.0,
              value_embeds=0, unet_skips=False, x0_residual=False,
              block=32, batch=4, warmup=0, cooldown=0.5, muon_lr=0.05, adam_lr=0.008, emb_lr=0.3, beta1=0.8,
              beta2=0.95, grad_clip=1.0, weight_decay=0.1, muon="float32", muon_momentum=0.95,
              muon_momentum_warmup=5.0, muon_momentum_start=0.85, block_warmup=6, block_start=8, batch_warmup=4,
              batch_start=2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    a = types.SimpleNamespace(**RECIPE)
    torch.manual_seed(0)
    model = twin.ModernLM(a, 23).to(F64)
    g = torch.Generator().manual_seed(23)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=F64) * (0.3 if p.dim() == 2 else 0.1))
    t = {f"param.{n}": p.detach().clone() for n, p in model.named_parameters()}
    opt_m, opts = twin.make_optimizers(model, a)  # the twin's own, as its main() makes them
    stream = torch.randint(0, 23, (200,), generator=g)
    starts = torch.randint(0, 200 - a.block, (ITERS, a.batch), generator=g)
    batch, block, momentum, loss = [], [], [], []
    for it in range(ITERS):
        twin.set_schedules(opt_m, opts, it, ITERS, a)
        b, T = twin.step_shape(it, a)
        rows = starts[it, :b]
        x = torch.stack([stream[s:s + T] for s in rows.tolist()])
        y = torch.stack([stream[s + 1:s + T + 1] for s in rows.tolist()])
        batch.append(b), block.append(T), momentum.append(opt_m.param_groups[0]["momentum"])
        loss.append(twin.train_step(model, model, opts, x, y, a.grad_clip))
    t.update({"stream": stream, "starts": starts, "batch": torch.tensor(batch), "block": torch.tensor(block),
              "momentum": torch.tensor(momentum, dtype=F64), "loss": torch.tensor(loss, dtype=F64)})
    for n, p in model.named_parameters():
        t[f"after.{n}"] = p.detach().clone()
    meta = {k: repr(v) for k, v in RECIPE.items()}
    meta.update(torch_version=torch.__version__, iters=str(ITERS))
    safetensors_io.save_file(t, os.path.join(out, "schedules.safetensors"), meta)
    print(f"wrote schedules.safetensors to {out}: batch {batch}, block {block}, losses {[round(v, 4) for v in loss]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
