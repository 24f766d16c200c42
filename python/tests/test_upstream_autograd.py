"""PyTorch's test/test_autograd.py, the cases in attograd's scope (upstream/autograd_cases.py),
each compared with what torch observed (fixtures/upstream.json, make_upstream_fixtures.py)."""

import pytest

import attograd
from upstream import autograd_cases
from upstream.compare import load, plain, same

FIXTURE = load()


@pytest.mark.parametrize("name", sorted(autograd_cases.CASES))
def test_case_matches_torch(name):
    same(FIXTURE[f"autograd_cases/{name}"], plain(autograd_cases.CASES[name](attograd)), name)
