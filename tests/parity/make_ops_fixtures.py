#!/usr/bin/env python3
"""Generate the op parity fixtures (tests/parity/fixtures/ops/) for tests/test_ops_parity.cpp.

    /work/venv-torch/bin/python tests/parity/make_ops_fixtures.py [--out DIR]

For each case, PyTorch computes in float64, for inputs x (the float tensors the op is
differentiated by), a random upstream gradient v shaped like the output and random directions
u shaped like the inputs:
    out        = f(x)
    grad.i     = d<out, v>/dx_i                              (torch.autograd.grad, create_graph)
    hvp.i      = d<grad(x), u>/dx_i = (H u)_i                (a Hessian-vector product of <f, v>)
and writes <case>.safetensors with the tensors in.i, v, u.i, out, grad.i, hvp.i (F64), the
integer/bool arguments (index, cond) and __metadata__ {case, op, torch_version}. The C++ test
knows how to call each case by its name; both sides list the same names.

The inputs hold the places where the semantics matter: abs at 0, ties of maximum/minimum and
of max/min along a dim, clamp at its bounds, pow(x, 0) at 0, logsumexp of large values.
Each case is seeded from a CRC32 of its name, so a case's file does not change when others
are added. The script deletes the old *.safetensors in the output folder first.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import zlib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "ops")
F64 = torch.float64


def t(values):
    return torch.tensor(values, dtype=F64)


def cases():
    """(name, op, inputs, extra tensors, f) with f(inputs) -> out."""
    ix = lambda v: torch.tensor(v, dtype=torch.int64)  # noqa: E731
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g, dtype=F64)  # noqa: E731
    gidx1 = ix([[2, 0, 1], [1, 0, 0]])
    gidx0 = ix([[1, 0], [1, 2], [1, 0], [0, 1]])
    cond = torch.tensor([False, True, True])
    ties_a = t([[1.0, 2.0, 3.0], [0.5, -1.0, 3.0]])
    ties_b = t([1.0, 0.0, 3.0])
    return [
        ("abs_at_zero", "abs", [t([-1.5, 0.0, 0.7, 0.0, 2.0])], {}, lambda x: x[0].abs()),
        ("sigmoid", "sigmoid", [t([-30.0, -2.0, -0.3, 0.0, 0.4, 1.7, 35.0])], {}, lambda x: torch.sigmoid(x[0])),
        ("silu", "silu", [r(2, 3) * 2], {}, lambda x: torch.nn.functional.silu(x[0])),
        ("where_broadcast", "where", [r(2, 3), r(2, 1)], {"cond": cond}, lambda x: torch.where(cond, x[0], x[1]) * x[0]),
        ("gather_dim1", "gather", [r(2, 4)], {"index": gidx1}, lambda x: torch.gather(x[0], 1, gidx1) ** 2),
        ("gather_dim0_repeats", "gather", [r(3, 2)], {"index": gidx0}, lambda x: torch.gather(x[0], 0, gidx0) ** 2),
        ("scatter_add_dim0", "scatter_add", [r(3, 2), r(4, 2)], {"index": gidx0},
         lambda x: torch.scatter_add(x[0], 0, gidx0, x[1]) ** 2),
        ("stack_dim1", "stack", [r(2, 3), r(2, 3)], {}, lambda x: torch.stack([x[0], x[1] * x[0], x[1]], 1)),
        ("maximum_ties", "maximum", [ties_a, ties_b], {}, lambda x: torch.maximum(x[0], x[1]) ** 2),
        ("minimum_ties", "minimum", [ties_a, ties_b], {}, lambda x: torch.minimum(x[0], x[1]) ** 2),
        ("clamp_at_bounds", "clamp", [t([-0.5, 0.7, 0.1, -2.0, 2.0, 0.69])], {}, lambda x: x[0].clamp(-0.5, 0.7) ** 2),
        ("clamp_min_only", "clamp", [t([-0.5, 0.7, 0.1, -2.0, 2.0])], {}, lambda x: x[0].clamp(min=0.1) * x[0]),
        ("var_all", "var", [r(3, 4)], {}, lambda x: x[0].var()),
        ("var_dim1_correction0_keepdim", "var", [r(2, 3, 4)], {}, lambda x: x[0].var(1, correction=0, keepdim=True)),
        ("var_dims02", "var", [r(2, 3, 4)], {}, lambda x: x[0].var((0, 2))),
        ("logsumexp_dim1_large", "logsumexp", [r(3, 4) + t([[1000.0], [-1000.0], [0.0]])], {},
         lambda x: torch.logsumexp(x[0], 1)),
        ("logsumexp_dims02_keepdim", "logsumexp", [r(2, 3, 2)], {}, lambda x: torch.logsumexp(x[0], (0, 2), keepdim=True)),
        ("softmax_dim0", "softmax", [r(3, 4, 2)], {}, lambda x: torch.softmax(x[0], 0)),
        ("log_softmax_dim1", "log_softmax", [r(2, 3, 2)], {}, lambda x: torch.log_softmax(x[0], 1)),
        ("matmul_dot", "matmul", [r(4), r(4)], {}, lambda x: torch.matmul(x[0], x[1])),
        ("matmul_vec_mat", "matmul", [r(4), r(4, 3)], {}, lambda x: torch.matmul(x[0], x[1])),
        ("matmul_mat_vec", "matmul", [r(3, 4), r(4)], {}, lambda x: torch.matmul(x[0], x[1])),
        ("matmul_batched_vec", "matmul", [r(2, 3, 4), r(4)], {}, lambda x: torch.matmul(x[0], x[1])),
        ("matmul_vec_batched", "matmul", [r(3), r(2, 3, 2)], {}, lambda x: torch.matmul(x[0], x[1])),
        ("max_dim1_ties", "max", [t([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0]])], {},
         lambda x: x[0].max(1).values ** 2),
        ("min_dim0_keepdim", "min", [r(3, 2, 2)], {}, lambda x: x[0].min(0, keepdim=True).values ** 3),
        ("pow_zero_at_zero", "pow", [t([0.0, 1.5, -2.0, 0.0])], {}, lambda x: x[0].pow(0.0) + x[0] ** 2),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.safetensors")):
        os.remove(old)
    for name, op, inputs, extra, f in cases():
        g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        x = [a.clone().requires_grad_() for a in inputs]
        out = f(x)
        v = torch.randn(out.shape, generator=g, dtype=F64)
        u = [torch.randn(a.shape, generator=g, dtype=F64) for a in inputs]
        grads = torch.autograd.grad(out, x, v, create_graph=True)
        live = [(gi, ui) for gi, ui in zip(grads, u) if gi.requires_grad]
        hvp = [None] * len(x)
        if live:
            hvp = torch.autograd.grad([gi for gi, _ in live], x, [ui for _, ui in live], allow_unused=True)
        tensors = {"out": out.detach(), "v": v}
        for i, a in enumerate(x):
            tensors[f"in.{i}"] = a.detach()
            tensors[f"u.{i}"] = u[i]
            tensors[f"grad.{i}"] = grads[i].detach()
            tensors[f"hvp.{i}"] = torch.zeros_like(a) if hvp[i] is None else hvp[i].detach()
        tensors.update(extra)
        # numpy(force=True): torch hands back "ZeroTensor"s for some zero gradients
        tensors = {k: torch.from_numpy(val.detach().numpy(force=True).copy()) for k, val in tensors.items()}
        for k, val in tensors.items():
            assert torch.isfinite(val.double()).all() if val.is_floating_point() else True, (name, k)
        safetensors_io.save_file(tensors, os.path.join(args.out, f"{name}.safetensors"),
                                 {"case": name, "op": op, "torch_version": torch.__version__})
    print(f"wrote {len(cases())} cases to {args.out}")


if __name__ == "__main__":
    main()
