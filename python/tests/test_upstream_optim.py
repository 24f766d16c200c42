"""PyTorch's test/optim/test_lrscheduler.py and test/test_optim.py, the cases in attograd's scope
(upstream/optim_cases.py), each compared with what torch observed (fixtures/upstream.json,
make_upstream_fixtures.py)."""

import pytest

import attograd
from upstream import optim_cases
from upstream.compare import load, plain, same

FIXTURE = load()


@pytest.mark.parametrize("name", sorted(optim_cases.CASES))
def test_case_matches_torch(name):
    # 20 float32 steps of Adam and SGD follow torch's to float32 round-off, not to its last bits
    same(FIXTURE[f"optim_cases/{name}"], plain(optim_cases.CASES[name](attograd)), name, rtol=1e-4)
