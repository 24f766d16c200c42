"""autograd.functional against torch's results (fixtures/functional.npz)."""

import os

import numpy as np
import pytest

import attograd
from attograd.autograd import functional as F
from conftest import FIXTURES, close
from torch_cases import functional_fn, vector_fn


@pytest.fixture(scope="module")
def ref():
    with np.load(os.path.join(FIXTURES, "functional.npz")) as f:
        return dict(f)


def test_transforms_match_torch(ref):
    attograd.set_default_dtype(attograd.float64)
    f, g = functional_fn(attograd), vector_fn(attograd)
    x, v = attograd.tensor(ref["x"]), attograd.tensor(ref["v"])
    out, vjp = F.vjp(g, x, v)
    close(out, ref["vjp_out"])
    close(vjp, ref["vjp"])
    close(F.jvp(g, x, v)[1], ref["jvp"])
    close(F.jacobian(g, x), ref["jacobian"])
    close(F.hessian(f, x), ref["hessian"])
    out, hvp = F.hvp(f, x, v)
    close(out, ref["f_out"])
    close(hvp, ref["hvp"])
    close(F.vhp(f, x, v)[1], ref["vhp"])


def test_tuple_inputs_and_options():
    a = attograd.tensor([1.0, 2.0], dtype=attograd.float64)
    b = attograd.tensor([3.0], dtype=attograd.float64)
    ja, jb = F.jacobian(lambda p, q: p * q, (a, b))
    assert ja.tolist() == [[3.0, 0.0], [0.0, 3.0]] and jb.tolist() == [[1.0], [2.0]]
    (haa, hab), (hba, hbb) = F.hessian(lambda p, q: (p * p * q).sum(), (a, b))
    assert hab.tolist() == [[2.0], [4.0]] and hbb.tolist() == [[0.0]]
    assert not F.jacobian(lambda p: p * 2, a).requires_grad
    assert F.jacobian(lambda p: p * p, a.clone().requires_grad_(), create_graph=True).requires_grad
    with pytest.raises(RuntimeError):
        F.jacobian(lambda p, q: p * 2, (a, b), strict=True)
    with pytest.raises(TypeError, match="one output"):
        F.jacobian(lambda p: (p, p), a)
