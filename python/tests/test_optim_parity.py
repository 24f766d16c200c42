"""attograd.optim against PyTorch 2 in float64: nn_cases.py's optimizer and scheduler cases, every
parameter and learning rate after each step, from fixtures/optim.npz (make_fixtures.py; torch's
Muon with its Newton–Schulz iteration kept in float64, as attograd's runs in the parameter's dtype)."""

import os

import numpy as np
import pytest

import attograd
from conftest import FIXTURES, close
from nn_cases import OPTIMIZER_CASES, loss_fn, run_optimizer


@pytest.fixture(scope="module")
def optim_fixture():
    with np.load(os.path.join(FIXTURES, "optim.npz")) as f:
        return dict(f)


def start(f):
    return [attograd.tensor(f[f"start{i}"], requires_grad=True) for i in range(3)]


@pytest.mark.parametrize("name,make", OPTIMIZER_CASES, ids=[c[0] for c in OPTIMIZER_CASES])
def test_trajectory_matches_torch(optim_fixture, name, make):
    f = optim_fixture
    trajectory, lrs = run_optimizer(attograd, make, *start(f), attograd.tensor(f["X"]), attograd.tensor(f["C"]))
    np.testing.assert_allclose(np.array(lrs), f[f"{name}/lrs"], rtol=1e-13, atol=0)
    for s, params in enumerate(trajectory):
        for i, p in enumerate(params):
            close(p, f[f"{name}/step{s}/param{i}"])


@pytest.mark.parametrize("name,make", OPTIMIZER_CASES, ids=[c[0] for c in OPTIMIZER_CASES])
def test_state_dict_resumes_the_trajectory(optim_fixture, name, make):
    """Three steps, the state dict into a fresh optimizer on copies of the parameters, three more:
    the same parameters as six straight steps (torch's)."""
    f = optim_fixture
    X, C = attograd.tensor(f["X"]), attograd.tensor(f["C"])
    params = start(f)
    opt, _ = make(attograd, *params)
    for _ in range(3):
        opt.zero_grad()
        loss_fn(attograd, params, X, C).backward()
        opt.step()
    saved = opt.state_dict()
    copies = [p.detach().clone().requires_grad_() for p in params]
    again, _ = make(attograd, *copies)
    again.load_state_dict(saved)
    assert again.state_dict()["param_groups"] == saved["param_groups"]
    for _ in range(3):
        again.zero_grad()
        loss_fn(attograd, copies, X, C).backward()
        again.step()
    straight = start(f)
    first, _ = make(attograd, *straight)
    for _ in range(6):
        first.zero_grad()
        loss_fn(attograd, straight, X, C).backward()
        first.step()
    for a, b in zip(copies, straight):
        assert attograd.equal(a, b)
