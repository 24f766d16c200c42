"""PyTorch's nn tests in attograd's scope (upstream/nn_cases.py: Embedding, LayerNorm,
MultiheadAttention and F.multi_head_attention_forward, load_state_dict and its hooks), each
compared with what torch observed (fixtures/upstream.json, make_upstream_fixtures.py)."""

import numpy as np
import pytest

import attograd
from upstream import nn_cases
from upstream.compare import load, plain, same

FIXTURE = load()


@pytest.mark.parametrize("name", sorted(nn_cases.CASES))
def test_case_matches_torch(name):
    same(FIXTURE[f"nn_cases/{name}"], plain(nn_cases.CASES[name](attograd)), name)


def test_LayerNorm_numeric():
    """test_nn.py's test_LayerNorm_numeric: a float32 LayerNorm over the three trailing dims
    (256, 256, 144) of two uniform samples agrees to 1e-5 with the definition, (x − mean) /
    sqrt(var + eps) over each sample's 9,437,184 values, evaluated here in float64 with NumPy."""
    dims = (256, 256, 144)
    norm = attograd.nn.LayerNorm(list(dims)).float()
    samples = np.random.default_rng(0).uniform(0, 1, (2, *dims)).astype(np.float32)
    with attograd.no_grad():
        got = norm(attograd.from_numpy(samples)).numpy().reshape(2, -1)
    rows = samples.reshape(2, -1).astype(np.float64)
    deviation = rows - rows.mean(axis=1)[:, None]
    expected = deviation / np.sqrt(np.square(deviation).mean(axis=1)[:, None] + norm.eps)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


def test_layer_norm_several_dims_gradcheck():
    """F.layer_norm over trailing dims (2, 4), with a weight and a bias: gradcheck and gradgradcheck
    in float64 (the C++ op of several dims, autograd/ops/nn_functional.cpp)."""
    rng = np.random.default_rng(3)
    x, w, b = (attograd.tensor(rng.standard_normal(s), dtype=attograd.float64, requires_grad=True)
               for s in ((3, 2, 4), (2, 4), (2, 4)))

    def f(x, w, b):
        return attograd.nn.functional.layer_norm(x, (2, 4), w, b, 1e-5)

    assert attograd.autograd.gradcheck(f, (x, w, b))
    assert attograd.autograd.gradgradcheck(f, (x, w, b))


def test_multi_head_attention_forward_gradcheck():
    """F.multi_head_attention_forward with bias_kv, zero attention and both masks: gradcheck and
    gradgradcheck in float64."""
    rng = np.random.default_rng(4)
    E, H, L, S, N = 4, 2, 2, 3, 2
    mk = lambda *s: attograd.tensor(rng.standard_normal(s) * 0.5, dtype=attograd.float64, requires_grad=True)  # noqa
    q, k, w, b, ow, ob, bk, bv = mk(L, N, E), mk(S, N, E), mk(3 * E, E), mk(3 * E), mk(E, E), mk(E), mk(1, 1, E), \
        mk(1, 1, E)
    kpm = attograd.tensor([[False, True, False], [False, False, False]])

    def f(q, k, w, b, ow, ob, bk, bv):
        out, weights = attograd.nn.functional.multi_head_attention_forward(
            q, k, k, E, H, w, b, bk, bv, True, 0.0, ow, ob, key_padding_mask=kpm)
        return out, weights

    args = (q, k, w, b, ow, ob, bk, bv)
    assert attograd.autograd.gradcheck(f, args)
    assert attograd.autograd.gradgradcheck(f, args)
