"""Makes the fixtures of torch's view rules, in-place ops, selection and sampling names and the
device surface: view_inplace_cases.npz (values, gradients and second-order gradients of
view_inplace_cases.py's cases) and view_inplace.json (what torch answers for the expressions
below: a view's strides and base, the errors, grad_fn names after in-place ops, topk's order on
ties and NaN, random_'s ranges, devices). Run by make_fixtures.py, or alone:

    /path/to/venv-with-torch/bin/python python/tests/make_view_fixtures.py
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402
import view_inplace_cases  # noqa: E402

OUT = make_fixtures.OUT

# Views of x = arange(24.).reshape(2, 3, 4): torch's shape, strides, offset, and whether the result
# is a view of x (its _base) or a copy.
VIEWS = [
    "x.split(2, 2)[1].view(2, 3, 1, 2)",
    "x.split(2, 2)[1].view(6, 2)",
    "x.chunk(3, 1)[2].view(2, 4)",
    "x.narrow(2, 1, 2).reshape(6, 2)",
    "x.transpose(0, 1).view(3, 2, 2, 2)",
    "x.transpose(1, 2).reshape(2, 12)",
    "x[:, 1].view(2, 2, 2)",
    "x[..., ::2].reshape(-1)",
    "x.view(4, 6).t().reshape(24)",
    "x.permute(2, 0, 1).flatten(1)",
    "x.unflatten(2, (2, 2))",
    "x.view(24)",
    "x.reshape(2, 3, 4)",
    "x[1:].view(12)",
    "x.detach()",
    "x.select(2, 1).unsqueeze(0).view(1, 6)",
    "x.mT.view(2, 4, 3)",
    "x.split(2, 2)[0].view(2, 3, 2).transpose(0, 2).view(2, 3, 2)",
]

# Views torch refuses, and what it says.
VIEW_ERRORS = [
    "x.transpose(1, 2).view(24)",
    "x.select(1, 0).view(8)",
    "x[:, :, 1:3].view(12)",
    "x.split(2, 2)[1].view(3, 4)",
]

# y = (ones(4, requires_grad) * 1) written in place; torch's grad_fn name after each statement.
INPLACE_NAMES = [
    "y.mul_(2)", "y.add_(1)", "y.sub_(0.5)", "y.div_(2)", "y.pow_(2)", "y.clamp_(0, 1)",
    "y.masked_fill_(y > 1.5, 0.5)", "y.add_(y.detach(), alpha=3)", "y[1:3] = 5", "y[1:3].mul_(2)", "y += 1", "y *= y",
]

# Statements that torch refuses, each in a fresh namespace (w a leaf that requires grad).
INPLACE_ERRORS = [
    "w.add_(1)", "w += 1", "w[0] = 2.0", "w[0].mul_(2)", "w.view(4).zero_()", "w.masked_fill_(w > 0, 0.0)",
    "w.index_put_((T.tensor([0]),), T.tensor(1.0))", "w.clamp_(0, 1)",
]

# A saved tensor written in place before the backward: the error's first part (up to "instead.").
SAVED_MODIFIED = [
    "b = w * 1; c = b * b; b.add_(1); c.sum().backward()",
    "e = w.exp(); s = e.sum(); e.mul_(2); s.backward()",
    "m = w * 2; mm = m * m; m[0] = 3.0; mm.sum().backward()",
]

# topk's values and indices where order matters: ties, NaN, integers, k = n, smallest.
TOPK = [
    "T.topk(T.tensor([1.0, 2.0, 2.0, 1.0, 3.0]), 3)",
    "T.topk(T.tensor([1.0, float('nan'), 2.0, -1.0]), 2)",
    "T.topk(T.tensor([1.0, float('nan'), 2.0, -1.0]), 2, largest=False)",
    "T.topk(T.tensor([[3, 1, 2], [0, 5, 5]]), 2, dim=1)",
    "T.topk(T.tensor([[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]), 3, dim=0)",
    "T.topk(T.tensor([4.0, 1.0, 3.0]), 3, largest=False)",
    "T.topk(T.tensor([4.0, 1.0, 3.0]), 0)",
    "T.topk(T.tensor(7.0), 1)",
    "T.tensor([[1.0, 9.0, 3.0]]).topk(k=1, dim=-1)",
    "T.topk(T.tensor([1.0, 5.0, 2.0, 4.0, 3.0, 5.0, 0.0]), 4, sorted=False)",
    "T.topk(T.tensor([2.0, 2.0, 1.0, 2.0, 3.0, 2.0]), 4, largest=False, sorted=False)",
    "T.topk(T.tensor([float(i % 7) for i in range(130)]), 2)",
    "T.topk(T.tensor([float(i % 5) for i in range(130)]), 2, largest=False)",
]

TOPK_ERRORS = ["T.topk(T.ones(3), 4)", "T.topk(T.ones(3), -1)", "T.topk(T.ones(2, 3), 2, dim=2)"]

# Selection and sampling names with integer results or errors (values: tolist()).
SELECTION = [
    "T.repeat_interleave(T.tensor([1, 0, 2]))",
    "T.tensor([1, 2]).repeat_interleave(2)",
    "T.tensor([[1, 2], [3, 4]]).repeat_interleave(T.tensor([1, 2]), dim=0)",
    "T.tensor([[1, 2], [3, 4]]).repeat_interleave(2, dim=1)",
    "T.tensor([[True, False]]).repeat_interleave(2)",
    "T.arange(6).reshape(2, 3).select(1, -1)",
    "T.tensor([2, 3]) ** T.tensor([3, 0])",
    "T.tensor([-2, 3, -1]) ** T.tensor([-1, -2, -3])",
    "2 ** T.tensor([-1, 2])",
    "T.pow(2, T.tensor([1, 2, 3]))",
    "T.tensor([[1, 2], [3, 4]]).mv(T.tensor([1, -1]))",
    "T.tensor([])",
    "T.tensor([[], []])",
    "T.tensor([], dtype=T.int64)",
    "T.arange(12.0).reshape(3, 4).index_put((T.tensor([0, 0, 2]),), T.tensor(1.0), accumulate=True)",
    "T.arange(4.0).index_put((T.tensor([True, False, True, False]),), T.tensor([7.0, 8.0]))",
]

SELECTION_ERRORS = [
    "T.tensor([1, 2]).repeat_interleave(T.tensor([1, -1]))",
    "T.tensor([1, 2]).repeat_interleave(-1)",
    "T.tensor([[1, 2], [3, 4]]).repeat_interleave(T.tensor([1, 2]))",
    "T.ones(3).select(0, 5)",
    "T.ones(2, 3).select(1, -4)",
    "T.mv(T.ones(2, 3), T.ones(2))",
    "T.mv(T.ones(3), T.ones(3))",
    "T.tensor([2]) ** -1",
    "T.zeros(3).random_(5, 2)",
    "T.tensor([True]).topk(1)",
]

# random_'s ranges: the set of values 4000 draws give (every value of a small range appears).
RANDOM_RANGES = [
    "T.zeros(4000).random_(3)",
    "T.zeros(4000).random_(5, 8)",
    "T.zeros(4000, dtype=T.int64).random_(-2, 2)",
    "T.zeros(4000, dtype=T.bool).random_()",
    "T.zeros(4000, dtype=T.float64).random_(0, 4)",
]

# The nn names of this round: outputs and reprs.
MODULES = [
    "repr(T.nn.Flatten())", "repr(T.nn.Flatten(0, 1))", "repr(T.nn.Unflatten(1, (2, 3)))",
    "tuple(T.nn.Flatten()(T.zeros(2, 3, 4)).shape)", "tuple(T.nn.Flatten(0, 1)(T.zeros(2, 3, 4)).shape)",
    "tuple(T.nn.Unflatten(1, (2, 2))(T.zeros(3, 4)).shape)", "tuple(T.nn.Unflatten(-1, [2, -1])(T.zeros(3, 4)).shape)",
    "buffers()", "isinstance(T.ones(1), T.nn.Buffer)", "isinstance(T.nn.Buffer(T.ones(1)), T.nn.Buffer)",
    "T.nn.Buffer(T.ones(2, requires_grad=True)).requires_grad", "type(T.nn.Buffer(T.ones(1))).__name__",
]

# torch.device as torch answers (these do not depend on what torch was built with).
DEVICES = [
    "repr(T.device('cpu'))", "repr(T.device('cuda'))", "repr(T.device('cuda:1'))", "repr(T.device('cuda', 0))",
    "repr(T.device('cpu', 0))", "repr(T.device('cpu:0'))", "repr(T.device(0))", "str(T.device('cuda:0'))",
    "str(T.device('mps'))", "T.device('cpu') == T.device('cpu')", "T.device('cpu') == 'cpu'",
    "T.device('cpu') == T.device('cpu', 0)", "T.device('cuda:0').index", "T.device('cpu').type",
    "hash(T.device('cpu')) == hash(T.device('cpu'))", "T.zeros(1).device.index", "repr(T.zeros(1).device)",
    "T.zeros(1).is_pinned()", "T.zeros(1).is_cuda", "T.zeros(1).is_cpu", "T.zeros(1).get_device()",
    "T.backends.mps.is_available()", "T.backends.mps.is_built()", "T.cuda.device_count()", "T.cuda.is_available()",
    "repr(T.get_default_device())", "T.accelerator.is_available()",
]

DEVICE_ERRORS = ["T.device('foo')", "T.device('cuda:x')", "T.device('cuda:-1')", "T.device('cuda:1', 0)"]


def _run(expr, env):
    try:
        return {"value": eval(expr, env)}
    except Exception as e:  # noqa: BLE001 (torch's exception is the fixture)
        return {"error": type(e).__name__, "message": str(e)}


def _x():
    return torch.arange(24.0).reshape(2, 3, 4).clone()  # no view itself: a view of it has it as _base


def _views():
    out = []
    for e in VIEWS:
        x = _x()
        r = eval(e, {"T": torch, "x": x})
        out.append({"expr": e, "shape": list(r.shape), "stride": list(r.stride()), "offset": r.storage_offset(),
                    "is_view": r._is_view(), "base_is_x": r._base is x, "values": r.tolist()})
    return out


def _names():
    out = []
    for e in INPLACE_NAMES:
        y = torch.ones(4, requires_grad=True) * 1
        exec(e, {"T": torch, "y": y})
        out.append([e, y.grad_fn.name()])
    # A view's grad_fn once its base was written in place, and the version counter.
    base = torch.ones(4, requires_grad=True) * 1
    v = base[1:3]
    base.mul_(2)
    y = torch.zeros(3)
    versions = [y._version]
    for stmt in ["y.add_(1)", "y[0] = 2.0", "y.mul_(2)", "y.zero_()", "y[1:].fill_(3.0)", "y.copy_(T.ones(3))"]:
        exec(stmt, {"T": torch, "y": y})
        versions.append(y._version)
    return out, v.grad_fn.name(), versions


def _errors(exprs, env_of):
    out = []
    for e in exprs:
        env = env_of()
        try:
            exec(e, env)
            out.append([e, None, None])
        except Exception as ex:  # noqa: BLE001
            out.append([e, type(ex).__name__, str(ex)])
    return out


def make_tables():
    T = torch
    env = {"T": T}
    ranges = []
    for e in RANDOM_RANGES:
        torch.manual_seed(0)
        r = eval(e, env)
        ranges.append([e, str(r.dtype).replace("torch.", ""), sorted(set(r.tolist()))])
    names, view_after_base, versions = _names()
    topk = []
    for e in TOPK:
        r = eval(e, env)
        topk.append([e, r.values.tolist(), r.indices.tolist(), str(r.values.dtype).replace("torch.", "")])
    selection = []
    for e in SELECTION:
        r = eval(e, env)
        selection.append([e, r.tolist(), str(r.dtype).replace("torch.", ""), list(r.shape)])
    modules_env = {"T": T, "buffers": lambda: view_inplace_cases.buffer_names(T)}
    tables = {
        "views": _views(),
        "view_errors": _errors(VIEW_ERRORS, lambda: {"T": T, "x": _x()}),
        "inplace_names": names,
        "view_grad_fn_after_base_write": view_after_base,
        "versions": versions,
        "inplace_errors": _errors(INPLACE_ERRORS, lambda: {"T": T, "w": T.ones(4, requires_grad=True)}),
        "saved_modified": _errors(SAVED_MODIFIED, lambda: {"T": T, "w": T.ones(3, requires_grad=True)}),
        "topk": topk,
        "topk_errors": _errors(TOPK_ERRORS, lambda: {"T": T}),
        "selection": selection,
        "selection_errors": _errors(SELECTION_ERRORS, lambda: {"T": T}),
        "random_ranges": ranges,
        "modules": [[e, eval(e, modules_env)] for e in MODULES],
        "devices": [[e, eval(e, {"T": T})] for e in DEVICES],
        "device_errors": _errors(DEVICE_ERRORS, lambda: {"T": T}),
        "torch": torch.__version__,
    }
    with open(os.path.join(OUT, "view_inplace.json"), "w") as f:
        json.dump(tables, f, indent=1, allow_nan=True)
        f.write("\n")


def make_cases():
    store = {}
    for case in view_inplace_cases.CASES:
        xs = [make_fixtures.draw(s, i in case.positive) for i, s in enumerate(case.shapes)]
        make_fixtures.record_case(store, case.name, xs, lambda *a, c=case: c.fn(torch, *a))
    np.savez_compressed(os.path.join(OUT, "view_inplace_cases.npz"), **store)


def make():
    torch.set_default_dtype(torch.float32)
    make_cases()
    make_tables()


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make()
    print(f"view and in-place fixtures written to {OUT} with torch {torch.__version__}")
