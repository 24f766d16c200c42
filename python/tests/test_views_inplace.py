"""torch's view rules and in-place ops recorded in a graph, against torch's answers
(fixtures/view_inplace.json and view_inplace_cases.npz, made by make_view_fixtures.py): a view is
made whenever torch's stride computation allows it, with torch's strides and _base; a write
through a view reaches its base; in-place ops on tensors in a graph are recorded (gradients to
second order equal torch's); torch's refusals and messages."""

import os

import numpy as np
import pytest

import attograd
from conftest import FIXTURES
from test_parity import run_case
from view_inplace_cases import CASES

T = attograd


@pytest.fixture(scope="module")
def view_cases():
    with np.load(os.path.join(FIXTURES, "view_inplace_cases.npz")) as f:
        return dict(f)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_torch(view_cases, case):
    attograd.set_default_dtype(attograd.float64)
    run_case(view_cases, case.name, len(case.shapes), lambda *xs: case.fn(attograd, *xs))


def test_every_case_has_its_fixture(view_cases):
    names = {k.split("/")[0] for k in view_cases}
    missing = [c.name for c in CASES if c.name not in names]
    assert not missing, f"cases without torch fixtures (run make_fixtures.py): {missing}"


def _x():
    return T.arange(24.0).reshape(2, 3, 4).clone()


def test_views_have_torchs_strides_and_base(view_tables):
    assert len(view_tables["views"]) >= 15
    for row in view_tables["views"]:
        x = _x()
        r = eval(row["expr"], {"T": T, "x": x})
        got = {"shape": list(r.shape), "stride": list(r.stride()), "offset": r.storage_offset(),
               "is_view": r._is_view(), "base_is_x": r._base is x, "values": r.tolist()}
        want = {k: row[k] for k in got}
        assert got == want, row["expr"]


def test_views_torch_refuses_raise_its_error(view_tables):
    for expr, kind, message in view_tables["view_errors"]:
        with pytest.raises(Exception) as info:
            eval(expr, {"T": T, "x": _x()})
        assert type(info.value).__name__ == kind and str(info.value) == message, expr


def test_a_write_through_a_view_reaches_its_base_and_back():
    x = _x()
    k = x.split(2, 2)[1].view(2, 3, 1, 2)  # nanoGPT's k.view(B, T, nh, hs) of a split piece
    k.mul_(-1)
    assert x[0, 0].tolist() == [0.0, 1.0, -2.0, -3.0]
    x[1, 2, 3] = 100.0
    assert k[1, 2, 0].tolist() == [-22.0, 100.0]
    assert k._base is x and x._base is None and k.output_nr == 0


def test_detach_and_copies_are_no_views():
    x = _x()
    assert not x.detach()._is_view() and x.detach()._base is None
    c = x.transpose(1, 2).reshape(24)  # a copy: not viewable
    assert not c._is_view() and c._base is None
    c.zero_()
    assert x.sum().item() == sum(range(24))


def test_in_place_ops_take_torchs_grad_fn_names(view_tables):
    for stmt, name in view_tables["inplace_names"]:
        y = T.ones(4, requires_grad=True) * 1
        exec(stmt, {"T": T, "y": y})
        assert y.grad_fn.name() == name, stmt


def test_a_view_takes_its_history_from_its_base_after_a_write(view_tables):
    base = T.ones(4, requires_grad=True) * 1
    v = base[1:3]
    base.mul_(2)
    assert v.grad_fn.name() == view_tables["view_grad_fn_after_base_write"]
    v.sum().backward()  # the gradient goes through the mul_ into the leaf


def test_version_counter_counts_each_write(view_tables):
    y = T.zeros(3)
    versions = [y._version]
    for stmt in ["y.add_(1)", "y[0] = 2.0", "y.mul_(2)", "y.zero_()", "y[1:].fill_(3.0)", "y.copy_(T.ones(3))"]:
        exec(stmt, {"T": T, "y": y})
        versions.append(y._version)
    assert versions == view_tables["versions"]


def test_in_place_on_a_leaf_that_requires_grad_raises_torchs_error(view_tables):
    assert len(view_tables["inplace_errors"]) >= 6
    for stmt, kind, message in view_tables["inplace_errors"]:
        w = T.ones(4, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            exec(stmt, {"T": T, "w": w})
        assert type(info.value).__name__ == kind and str(info.value) == message, stmt
        assert w.tolist() == [1.0] * 4, f"{stmt} wrote before it raised"
    w = T.ones(2, requires_grad=True)
    with T.no_grad():
        w -= 0.5  # an optimizer's update: allowed, as in torch
        w[0] = 3.0
    assert w.tolist() == [3.0, 0.5] and w.requires_grad and w.is_leaf


def test_a_saved_tensor_written_in_place_stops_backward_with_torchs_message(view_tables):
    for stmt, kind, message in view_tables["saved_modified"]:
        w = T.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            exec(stmt, {"T": T, "w": w})
        got = str(info.value)
        torch_first, _, torch_hint = message.partition(" instead. ")
        assert got.startswith(torch_first + " instead. ") and got.endswith(torch_hint), f"{stmt}\n{got}"


def test_in_place_into_an_integer_tensor_keeps_torchs_casting_rule():
    i = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.mul_(0.5)
    i += 2
    assert i.tolist() == [3, 4] and i.dtype == T.int64


def test_a_tensor_outside_a_graph_joins_it_through_an_in_place_op():
    w = T.tensor([1.0, 2.0], requires_grad=True)
    total = T.zeros(())
    total += (w * w).sum()  # total was no part of a graph: now it is (AddBackward0), as in torch
    acc = T.zeros(3)
    acc[1:] = w * 3
    (total + acc.sum()).backward()
    assert w.grad.tolist() == [5.0, 7.0] and not total.is_leaf and not acc.is_leaf
