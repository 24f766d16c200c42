"""Indexing beyond the parity cases (test_parity.py has the values and gradients): views share
memory as torch's do, assignment, and torch's errors."""

import pytest

import attograd


def test_basic_indexing_gives_views():
    x = attograd.arange(12.0).reshape(3, 4)
    row, col, stepped = x[1], x[:, 2], x[::2, 1::2]
    with attograd.no_grad():
        x.mul_(10)
    assert row.tolist() == [40, 50, 60, 70] and col.tolist() == [20, 60, 100]
    assert stepped.tolist() == [[10, 30], [90, 110]]
    assert x[..., None].shape == (3, 4, 1) and x[None].shape == (1, 3, 4) and x[-1, -1].item() == 110


def test_advanced_indexing_copies():
    x = attograd.arange(6).reshape(3, 2)
    assert x[[2, 0]].tolist() == [[4, 5], [0, 1]]
    assert x[attograd.tensor([[0], [2]])].shape == (2, 1, 2)
    assert x[x > 2].tolist() == [3, 4, 5]
    assert x[:, attograd.tensor([True, False])].tolist() == [[0], [2], [4]]
    assert x[attograd.tensor(True)].shape == (1, 3, 2)


def test_assignment():
    x = attograd.zeros(3, 4)
    x[0] = 1
    x[1, 1:3] = attograd.tensor([2.0, 3.0])
    x[:, 3] = attograd.tensor([7.0])  # broadcast
    x[x == 0] = -1
    assert x.tolist() == [[1, 1, 1, 7], [-1, 2, 3, 7], [-1, -1, -1, 7]]
    x[[0, 2]] = attograd.tensor([[5.0, 5.0, 5.0, 5.0], [6.0, 6.0, 6.0, 6.0]])
    assert x[0].tolist() == [5] * 4 and x[2].tolist() == [6] * 4
    x[attograd.tensor([True, False, False])] = 0
    assert x[0].tolist() == [0] * 4


def test_assignment_follows_the_in_place_rules():
    w = attograd.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 1.0
    with attograd.no_grad():
        w[0] = 1.0
    assert w.tolist() == [1, 0, 0]
    x = attograd.zeros(3)
    x[0] = w[1] * 2  # recorded: x joins the graph (torch's CopySlices)
    x.sum().backward()
    assert w.grad.tolist() == [0.0, 2.0, 0.0] and x.grad_fn.name() == "torch::autograd::CopySlices"


def test_index_errors():
    x = attograd.zeros(2, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="does not match the shape of the indexed tensor"):
        x[attograd.tensor([True, False, True])]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[attograd.tensor([0, 5])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError):
        x[1.5]
