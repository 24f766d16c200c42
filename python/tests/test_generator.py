"""torch's generator from Python: every case of generator_cases.py returns, under attograd, the
values torch returned (fixtures/generator.npz, make_generator_fixtures.py), bit for bit; and the
seeded bigram program (programs/seeded_bigram.py) prints torch's losses to float32 round-off and
torch's sample."""

import json
import os
import re
import sys

import numpy as np
import pytest

import attograd
import generator_cases
from conftest import FIXTURES, HERE

sys.path.insert(0, os.path.join(HERE, "programs"))
import seeded_bigram  # noqa: E402


@pytest.fixture(scope="module")
def drawn():
    with np.load(os.path.join(FIXTURES, "generator.npz")) as f:
        return dict(f)


def same_bits(got, want, name):
    got = np.asarray(got.detach().numpy() if isinstance(got, attograd.Tensor) else got)
    assert got.shape == want.shape, f"{name}: shape {got.shape} vs {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} vs {want.dtype}"
    differ = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert differ.size == 0, f"{name}: {differ.size} of {want.size} values differ, the first at {differ[0]}: " \
                             f"{got.reshape(-1)[differ[0]]!r} vs torch's {want.reshape(-1)[differ[0]]!r}"


@pytest.mark.parametrize("case", generator_cases.CASES, ids=[c.__name__ for c in generator_cases.CASES])
def test_draws_what_torch_draws(drawn, case):
    out = case(attograd)
    keys = {k.split("/", 1)[1] for k in drawn if k.startswith(case.__name__ + "/")}
    assert keys == set(out), f"cases and fixtures disagree: {sorted(keys ^ set(out))}"
    for key, t in out.items():
        same_bits(t, drawn[f"{case.__name__}/{key}"], key)


def test_seeded_bigram_prints_torchs_losses_and_sample():
    with open(os.path.join(FIXTURES, "seeded_bigram.json")) as f:
        want = json.load(f)["lines"]
    got = []
    seeded_bigram.main(attograd, got.append)
    assert len(got) == len(want)
    number = re.compile(r"\d+\.\d+")
    for g, w in zip(got, want):
        assert number.sub("#", g) == number.sub("#", w)  # the same words and steps, the same sample
        for a, b in zip(number.findall(g), number.findall(w)):
            assert abs(float(a) - float(b)) <= 2e-5 * abs(float(b)), f"{g!r} vs torch's {w!r}"


def test_the_default_generator_is_torchs():
    attograd.manual_seed(0)
    assert attograd.initial_seed() == 0
    assert attograd.get_rng_state().shape == (5056,)
    assert attograd.manual_seed(5) is attograd.default_generator
    g = attograd.Generator()
    assert g.manual_seed(3) is g and g.device == attograd.device("cpu")
    with pytest.raises(RuntimeError, match="CPU only"):
        attograd.Generator("cuda")
    with pytest.raises(ValueError, match="Overflow"):
        attograd.manual_seed(2**64)
    with pytest.raises(TypeError):
        attograd.randn(2, generator=5)
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size 5056"):
        attograd.set_rng_state(attograd.zeros(4, dtype=attograd.int64))


def test_torchs_refusals():
    x = attograd.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.normal_()
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        attograd.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        attograd.multinomial(attograd.ones(2), 3)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        attograd.randint(5, 5, (2,))


def test_normal_is_differentiable_in_mean_and_std():
    mean = attograd.zeros(3, requires_grad=True)
    std = attograd.full((3,), 2.0, requires_grad=True)
    attograd.manual_seed(0)
    out = attograd.normal(mean, std)
    out.sum().backward()
    assert mean.grad.tolist() == [1.0, 1.0, 1.0]
    assert std.grad.tolist() == (out.detach() / 2).tolist()  # d(z·std + mean)/dstd = z
