"""attograd.nn against PyTorch 2 in float64: nn_cases.py's modules (Python Modules of C++ layers,
built from the same source as torch's), losses and functional ops, from the torch-made
fixtures (fixtures/nn.npz, losses.npz; make_fixtures.py)."""

import os

import numpy as np
import pytest

import attograd
from conftest import FIXTURES, close
from nn_cases import LOSS_CASES, MODULE_CASES


@pytest.fixture(scope="module")
def nn_fixture():
    with np.load(os.path.join(FIXTURES, "nn.npz")) as f:
        return dict(f)


@pytest.fixture(scope="module")
def loss_fixture():
    with np.load(os.path.join(FIXTURES, "losses.npz")) as f:
        return dict(f)


@pytest.mark.parametrize("name,make,spec", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_module_matches_torch(nn_fixture, tables, name, make, spec):
    model = make(attograd).double()
    assert [n for n, _ in model.named_parameters()] == tables["nn_names"][name]
    state = {k.split("/", 2)[2]: attograd.tensor(v) for k, v in nn_fixture.items() if k.startswith(f"{name}/state/")}
    assert repr(model.load_state_dict(state)) == "<All keys matched successfully>"
    if name == "tokens":
        model.eval()
    x = attograd.tensor(nn_fixture[f"{name}/input"])
    if spec[0] == "float":
        x.requires_grad_()
    out = model(x)
    close(out, nn_fixture[f"{name}/out"])
    out.backward(attograd.tensor(nn_fixture[f"{name}/grad_out"]))
    for n, p in model.named_parameters():
        close(p.grad, nn_fixture[f"{name}/grad/{n}"])
    if spec[0] == "float":
        close(x.grad, nn_fixture[f"{name}/input_grad"])


@pytest.mark.parametrize("name,fn", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_loss_matches_torch(loss_fixture, name, fn):
    f = {k.split("/", 1)[1]: v for k, v in loss_fixture.items() if k.startswith(name + "/")}
    x, p, w = (attograd.tensor(f[k], requires_grad=True) for k in "xpw")
    t = attograd.tensor(f["t"])
    out = fn(attograd, attograd.nn.functional, x, t, p, w)
    close(out, f["out"])
    grads = attograd.autograd.grad(out, [x, p, w], attograd.tensor(f["grad_out"]), allow_unused=True)
    for k, g in zip("xpw", grads):
        if f"grad_{k}" in f:  # torch computed it
            close(g if g is not None else attograd.zeros_like(x if k == "x" else p if k == "p" else w), f[f"grad_{k}"])


def test_every_fixture_is_finite(nn_fixture, loss_fixture):
    for store in (nn_fixture, loss_fixture):
        assert np.isfinite(np.concatenate([v.ravel().astype(float) for v in store.values()])).all()
