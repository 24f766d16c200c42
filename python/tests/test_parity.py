"""Values, gradients and second-order gradients of torch_cases.py's cases against PyTorch's, in
float64: the same source run on attograd as PyTorch ran it."""

import numpy as np
import pytest

import attograd
from conftest import close
from torch_cases import CASES, make_function


def run_case(cases, name, n_inputs, fn):
    xs = [attograd.tensor(cases[f"{name}/input{i}"], requires_grad=True) for i in range(n_inputs)]
    out = fn(*xs)
    close(out, cases[f"{name}/out"])
    g = attograd.tensor(cases[f"{name}/grad_out"])
    first = attograd.autograd.grad(out, xs, g, create_graph=True, allow_unused=True)
    first = [f if f is not None else attograd.zeros_like(x) for f, x in zip(first, xs)]
    for i, f in enumerate(first):
        close(f, cases[f"{name}/grad{i}"])
    vs = [attograd.tensor(cases[f"{name}/v{i}"]) for i in range(n_inputs)]
    inner = [(f * v).sum() for f, v in zip(first, vs) if f.requires_grad]
    if not inner:
        for i in range(n_inputs):
            assert not cases[f"{name}/gradgrad{i}"].any(), "torch has second-order terms where attograd has none"
        return
    total = inner[0]
    for t in inner[1:]:
        total = total + t
    gg = attograd.autograd.grad(total, xs, allow_unused=True)
    for i, x in enumerate(xs):
        expected = cases[f"{name}/gradgrad{i}"]
        close(gg[i] if gg[i] is not None else attograd.zeros_like(x), expected)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_torch(cases, case):
    attograd.set_default_dtype(attograd.float64)
    run_case(cases, case.name, len(case.shapes), lambda *xs: case.fn(attograd, *xs))


def test_python_function_matches_torch(cases):
    XExp = make_function(attograd)
    run_case(cases, "function_xexp", 1, lambda x: XExp.apply(x, 1.5))


def test_every_case_has_its_fixture(cases):
    names = {k.split("/")[0] for k in cases}
    missing = [c.name for c in CASES if c.name not in names]
    assert not missing, f"cases without torch fixtures (run make_fixtures.py): {missing}"
    assert np.isfinite(np.concatenate([v.ravel() for v in cases.values()])).all()
