#!/usr/bin/env python3
"""Generate the op parity fixtures (tests/parity/fixtures/ops/) for tests/autograd/test_ops_parity.cpp.

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
    ] + api_cases(r, ix, t)


def api_cases(r, ix, t):
    """Issue 21's ops, methods and losses (appended: the draws of the cases above are unchanged).

    A case may carry a sixth element, a dict of options: "aux": f(x) -> {name: tensor} of extra
    results stored as expected.<name> (indices, bool masks); "hvp": False stores no hvp.i (torch
    gives nan there); "finite": False allows a nan output (torch's mean over an all-ignored batch).
    """
    F = torch.nn.functional
    ties3 = t([[[1.0, 4.0], [4.0, 0.5], [2.0, 4.0]], [[-1.0, 3.0], [3.0, 3.0], [0.0, -2.0]]])  # (2, 3, 2)
    cmp_a = t([[0.5, -1.0, 2.0], [1.0, 0.25, -3.0]])
    cmp_b = t([0.5, 0.0, 2.5])
    tg = ix([4, 0, -100, 2])  # (4), one ignored
    tg_all_ignored = ix([-100, -100, -100])
    tg_custom = ix([1, 2, 2, 0])  # ignore_index 2: rows 1 and 2 ignored
    tg_nd = ix([[0, 2], [-100, 1]])  # (N, d1) = (2, 2) for (N, C, d1) = (2, 3, 2)
    tg_nd_1 = ix([[0, 2], [1, 1]])  # the same with ignore_index 1
    tg_nd2 = ix([[[0, 2, 1], [1, 1, 0]], [[2, -100, 0], [1, 2, 2]]])  # (2, 2, 3) for (2, 3, 2, 3)
    tg_unbatched = ix(3)  # 0-d, for an unbatched (C) input
    w5 = r(5).abs() + 0.5
    w3 = r(3).abs() + 0.5
    bce_w = r(2, 1).abs()
    bce_pw = r(3).abs() + 0.5
    l1_b = t([[0.3, -1.0, 2.0], [0.5, 0.5, -0.7]])
    l1_a = t([[0.3, 1.0, -2.0], [1.5, 0.5, 0.1]])  # equal at two places: |0|' = 0
    return [
        ("sin", "sin", [r(2, 3) * 2], {}, lambda x: torch.sin(x[0])),
        ("cos", "cos", [r(2, 3) * 2], {}, lambda x: torch.cos(x[0])),
        ("amax_dims02_ties", "amax", [ties3], {}, lambda x: x[0].amax((0, 2)) ** 2),
        ("amin_dim1_keepdim_ties", "amin", [-ties3], {}, lambda x: x[0].amin(1, keepdim=True) ** 3),
        ("amax_all", "amax", [r(3, 4)], {}, lambda x: x[0].amax() * x[0]),
        ("max_all_ties", "max", [t([[1.0, 3.0, 3.0], [2.0, 3.0, 1.0]])], {}, lambda x: x[0].max() ** 2),
        ("min_all", "min", [r(3, 4)], {}, lambda x: x[0].min() ** 2),
        ("max_dim1_pair", "max", [t([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0]])], {},
         lambda x: x[0].max(1).values * 2, {"aux": lambda x: {"indices": x[0].max(1).indices}}),
        ("min_dim0_keepdim_pair", "min", [ties3], {}, lambda x: x[0].min(0, keepdim=True).values ** 2,
         {"aux": lambda x: {"indices": x[0].min(0, keepdim=True).indices}}),
        ("norm_all", "norm", [r(3, 4)], {}, lambda x: x[0].norm()),
        ("norm_dim1_keepdim", "norm", [r(2, 3, 4)], {}, lambda x: x[0].norm(2, 1, True) * x[0]),
        ("norm_dims02", "norm", [r(2, 3, 4)], {}, lambda x: x[0].norm(dim=(0, 2)) ** 2),
        # a zero row: torch's gradient is 0 there (its second derivative is nan: no hvp stored)
        ("norm_zero_row", "norm", [t([[0.0, 0.0, 0.0], [1.0, 2.0, -2.0]])], {}, lambda x: x[0].norm(dim=1),
         {"hvp": False}),
        ("flip_dims02", "flip", [r(2, 3, 4)], {}, lambda x: x[0].flip((0, 2)) * x[0]),
        ("chunk_7_into_3", "chunk", [r(2, 7)], {},
         lambda x: torch.cat([c * (i + 1) for i, c in enumerate(x[0].chunk(3, 1))], 1) ** 2),
        ("chunk_6_into_4_gives_3", "chunk", [r(6)], {}, lambda x: torch.stack(x[0].chunk(4), 0) ** 2),
        ("unbind_dim1", "unbind", [r(2, 3)], {},
         lambda x: torch.stack([u * (i + 1) for i, u in enumerate(x[0].unbind(1))], 0) ** 2),
        ("compare", "gt", [cmp_a, cmp_b], {}, lambda x: torch.where(x[0] > x[1], x[0], x[1] * 2),
         {"aux": lambda x: {"lt": x[0] < x[1], "le": x[0] <= x[1], "gt": x[0] > x[1], "ge": x[0] >= x[1],
                            "eq": x[0] == x[1], "ne": x[0] != x[1], "gt_scalar": x[0] > 0.5,
                            "le_scalar": x[0] <= 0.5, "eq_scalar": x[0] == 0.5, "scalar_lt": 0.25 < x[0]}}),
        # losses
        ("mse_loss_mean", "mse_loss", [r(2, 3), r(2, 3)], {}, lambda x: F.mse_loss(x[0], x[1])),
        ("mse_loss_sum", "mse_loss", [r(2, 3), r(2, 3)], {}, lambda x: F.mse_loss(x[0], x[1], reduction="sum")),
        ("mse_loss_none", "mse_loss", [r(2, 3), r(2, 3)], {}, lambda x: F.mse_loss(x[0], x[1], reduction="none")),
        ("l1_loss_mean", "l1_loss", [l1_a, l1_b], {}, lambda x: F.l1_loss(x[0], x[1])),
        ("l1_loss_sum", "l1_loss", [l1_a, l1_b], {}, lambda x: F.l1_loss(x[0], x[1], reduction="sum")),
        ("l1_loss_none", "l1_loss", [l1_a, l1_b], {}, lambda x: F.l1_loss(x[0], x[1], reduction="none")),
        ("bce_with_logits_mean", "binary_cross_entropy_with_logits",
         [r(2, 3) * 3 + t([[50.0, 0, 0], [0, -50.0, 0]]), torch.rand(2, 3, dtype=F64)], {},
         lambda x: F.binary_cross_entropy_with_logits(x[0], x[1])),
        ("bce_with_logits_weights_sum", "binary_cross_entropy_with_logits",
         [r(2, 3) * 2, torch.rand(2, 3, dtype=F64)], {"weight": bce_w, "pos_weight": bce_pw},
         lambda x: F.binary_cross_entropy_with_logits(x[0], x[1], weight=bce_w, pos_weight=bce_pw, reduction="sum")),
        ("bce_with_logits_none", "binary_cross_entropy_with_logits", [r(2, 3) * 2, torch.rand(2, 3, dtype=F64)], {},
         lambda x: F.binary_cross_entropy_with_logits(x[0], x[1], reduction="none")),
        ("nll_loss_mean_ignored", "nll_loss", [r(4, 5)], {"target": tg},
         lambda x: F.nll_loss(x[0].log_softmax(1), tg)),
        ("nll_loss_sum", "nll_loss", [r(4, 5)], {"target": tg}, lambda x: F.nll_loss(x[0], tg, reduction="sum")),
        ("nll_loss_none", "nll_loss", [r(4, 5)], {"target": tg}, lambda x: F.nll_loss(x[0], tg, reduction="none")),
        ("nll_loss_weight_mean", "nll_loss", [r(4, 5)], {"target": tg, "weight": w5},
         lambda x: F.nll_loss(x[0], tg, weight=w5)),
        ("nll_loss_nd_custom_ignore", "nll_loss", [r(2, 3, 2)], {"target": tg_nd_1},
         lambda x: F.nll_loss(x[0], tg_nd_1, ignore_index=1)),
        ("nll_loss_unbatched", "nll_loss", [r(5)], {"target": tg_unbatched}, lambda x: F.nll_loss(x[0], tg_unbatched)),
        ("nll_loss_all_ignored", "nll_loss", [r(3, 4)], {"target": tg_all_ignored},
         lambda x: F.nll_loss(x[0], tg_all_ignored), {"finite": False}),
        ("cross_entropy_mean", "cross_entropy", [r(4, 5) * 2], {"target": tg}, lambda x: F.cross_entropy(x[0], tg)),
        ("cross_entropy_ignore_index_2", "cross_entropy", [r(4, 5)], {"target": tg_custom},
         lambda x: F.cross_entropy(x[0], tg_custom, ignore_index=2)),
        ("cross_entropy_sum", "cross_entropy", [r(4, 5)], {"target": tg},
         lambda x: F.cross_entropy(x[0], tg, reduction="sum")),
        ("cross_entropy_none", "cross_entropy", [r(4, 5)], {"target": tg},
         lambda x: F.cross_entropy(x[0], tg, reduction="none")),
        ("cross_entropy_smoothing_mean", "cross_entropy", [r(4, 5)], {"target": tg},
         lambda x: F.cross_entropy(x[0], tg, label_smoothing=0.15)),
        ("cross_entropy_smoothing_sum", "cross_entropy", [r(4, 5)], {"target": tg},
         lambda x: F.cross_entropy(x[0], tg, reduction="sum", label_smoothing=0.3)),
        ("cross_entropy_smoothing_none", "cross_entropy", [r(4, 5)], {"target": tg},
         lambda x: F.cross_entropy(x[0], tg, reduction="none", label_smoothing=0.3)),
        ("cross_entropy_weight_smoothing", "cross_entropy", [r(4, 5)], {"target": tg, "weight": w5},
         lambda x: F.cross_entropy(x[0], tg, weight=w5, label_smoothing=0.2)),
        ("cross_entropy_weight_none", "cross_entropy", [r(4, 5)], {"target": tg, "weight": w5},
         lambda x: F.cross_entropy(x[0], tg, weight=w5, reduction="none")),
        ("cross_entropy_nd_none", "cross_entropy", [r(2, 3, 2, 3)], {"target": tg_nd2},
         lambda x: F.cross_entropy(x[0], tg_nd2, reduction="none")),
        ("cross_entropy_nd_smoothing_mean", "cross_entropy", [r(2, 3, 2)], {"target": tg_nd},
         lambda x: F.cross_entropy(x[0], tg_nd, label_smoothing=0.1)),
        ("cross_entropy_nd_weight", "cross_entropy", [r(2, 3, 2)], {"target": tg_nd, "weight": w3},
         lambda x: F.cross_entropy(x[0], tg_nd, weight=w3)),
        ("cross_entropy_unbatched", "cross_entropy", [r(5)], {"target": tg_unbatched},
         lambda x: F.cross_entropy(x[0], tg_unbatched)),
        ("cross_entropy_probabilities", "cross_entropy", [r(3, 4), torch.rand(3, 4, dtype=F64)], {},
         lambda x: F.cross_entropy(x[0], x[1], label_smoothing=0.1)),
        ("cross_entropy_probabilities_weight_sum", "cross_entropy", [r(2, 4, 3), torch.rand(2, 4, 3, dtype=F64)],
         {"weight": t([0.5, 1.0, 2.0, 1.5])},
         lambda x: F.cross_entropy(x[0], x[1], weight=t([0.5, 1.0, 2.0, 1.5]), reduction="sum")),
        ("cross_entropy_all_ignored", "cross_entropy", [r(3, 4)], {"target": tg_all_ignored},
         lambda x: F.cross_entropy(x[0], tg_all_ignored), {"finite": False}),
        ("cross_entropy_all_ignored_smoothing", "cross_entropy", [r(3, 4)], {"target": tg_all_ignored},
         lambda x: F.cross_entropy(x[0], tg_all_ignored, label_smoothing=0.2), {"finite": False}),
        ("cross_entropy_all_ignored_sum", "cross_entropy", [r(3, 4)], {"target": tg_all_ignored},
         lambda x: F.cross_entropy(x[0], tg_all_ignored, reduction="sum")),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.safetensors")):
        os.remove(old)
    for name, op, inputs, extra, f, *opts in cases():
        opts = opts[0] if opts else {}
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
            if opts.get("hvp", True):
                tensors[f"hvp.{i}"] = torch.zeros_like(a) if hvp[i] is None else hvp[i].detach()
        tensors.update(extra)
        for k, val in opts.get("aux", lambda x: {})(x).items():
            tensors[f"expected.{k}"] = val
        # numpy(force=True): torch hands back "ZeroTensor"s for some zero gradients
        tensors = {k: torch.from_numpy(val.detach().numpy(force=True).copy()) for k, val in tensors.items()}
        for k, val in tensors.items():
            if k == "out" and not opts.get("finite", True):
                continue
            assert torch.isfinite(val.double()).all() if val.is_floating_point() else True, (name, k)
        safetensors_io.save_file(tensors, os.path.join(args.out, f"{name}.safetensors"),
                                 {"case": name, "op": op, "torch_version": torch.__version__})
    print(f"wrote {len(cases())} cases to {args.out}")


if __name__ == "__main__":
    main()
