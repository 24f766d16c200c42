"""Shared pieces of the Python tests: the torch-made fixtures (fixtures/, written by
make_fixtures.py) and comparisons against them. No test needs torch."""

import json
import os

import numpy as np
import pytest

import attograd

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")


@pytest.fixture(scope="session")
def cases():
    with np.load(os.path.join(FIXTURES, "cases.npz")) as f:
        return dict(f)


@pytest.fixture(scope="session")
def tables():
    with open(os.path.join(FIXTURES, "tables.json")) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def view_tables():
    """What torch answers about views, in-place ops, selection, sampling and devices
    (make_view_fixtures.py)."""
    with open(os.path.join(FIXTURES, "view_inplace.json")) as f:
        return json.load(f)


@pytest.fixture(autouse=True)
def fresh_state():
    """Each test starts in grad mode with the float32 default, and leaves them so."""
    attograd.set_default_dtype(attograd.float32)
    attograd._C._set_grad_enabled(True)
    yield
    attograd.set_default_dtype(attograd.float32)
    attograd._C._set_grad_enabled(True)


def close(t, expected, rtol=1e-10, atol=1e-12):
    """t (a Tensor) equals the NumPy array expected within float64 round-off."""
    assert tuple(t.shape) == tuple(np.shape(expected)), f"shape {tuple(t.shape)} vs {np.shape(expected)}"
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=rtol, atol=atol)
