#!/usr/bin/env python3
"""Generate the fixture of tests/examples/test_examples.cpp (tests/parity/fixtures/examples/examples.json).

    /work/venv-torch/bin/python tests/parity/make_examples_fixtures.py [--out DIR]

PyTorch 2, float64, the same computations as the example programs' headers:

* mlp_gradient_penalty (examples/mlp_gradient_penalty/regression.h): the same data, model
  (Linear(2, 16), Tanh, Linear(16, 1)), deterministic initial weights 0.5·sin(1.7·k + phase),
  loss mse + 0.1·mean((‖∂ŷ/∂x‖ − 1)²) with the gradient made with create_graph, and Adam(lr=1e-2):
  the loss of each of the first 40 steps (before its update).
* softplus (examples/custom_function/softplus.h): torch.nn.functional.softplus at fixed
  points, its first derivative and its second derivative (double backward).

Floats are written by repr, so they round-trip exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import os

import torch
import torch.nn.functional as F
from torch import nn

torch.set_default_dtype(torch.float64)

POINTS, HIDDEN, PENALTY, STEPS = 32, 16, 0.1, 40
SOFTPLUS_X = [-30.0, -6.0, -1.5, -0.25, 0.0, 0.25, 1.5, 6.0, 30.0]


def waves(shape, phase, scale=0.5):
    n = math.prod(shape)
    return torch.tensor([scale * math.sin(1.7 * k + phase) for k in range(n)]).reshape(shape)


def mlp_gradient_penalty():
    x_data = waves((POINTS, 2), 0.3, 2.0)
    y = x_data[:, 0:1] ** 2 - torch.sin(x_data[:, 1:2])
    model = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
    model.load_state_dict({"0.weight": waves((HIDDEN, 2), 0.0), "0.bias": waves((HIDDEN,), 1.0, 0.1),
                           "2.weight": waves((1, HIDDEN), 2.0, 0.25), "2.bias": waves((1,), 3.0, 0.1)})
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        x = x_data.detach().requires_grad_()
        pred = model(x)
        (dpred_dx,) = torch.autograd.grad(pred.sum(), x, create_graph=True)
        penalty = (dpred_dx.norm(2, 1) - 1.0).pow(2).mean()
        loss = F.mse_loss(pred, y) + penalty * PENALTY
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"steps": STEPS, "losses": losses}


def softplus():
    x = torch.tensor(SOFTPLUS_X, requires_grad=True)
    y = F.softplus(x)
    (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x)
    return {"x": SOFTPLUS_X, "value": y.tolist(), "grad": d1.tolist(), "grad2": d2.tolist()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "fixtures", "examples"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    doc = {"torch_version": torch.__version__, "mlp_gradient_penalty": mlp_gradient_penalty(), "softplus": softplus()}
    with open(os.path.join(args.out, "examples.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
