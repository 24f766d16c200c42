"""Hardening, class 8: pickling a tensor with a zero-size dimension. A tensor is pickled as its
values and its shape; nested lists could not carry the dims after a zero ((2, 0, 3) nests as
[[], []], which came back (2, 0))."""

import copy
import pickle

import pytest

import attograd as torch


@pytest.mark.parametrize("shape", [(2, 0, 3), (0,), (0, 4), (3, 0), (1, 2, 0, 5), (), (2, 3)])
def test_every_shape_survives_a_pickle(shape):
    t = torch.arange(float(torch.zeros(shape).numel())).reshape(shape) if shape else torch.tensor(2.5)
    back = pickle.loads(pickle.dumps(t))
    assert back.shape == t.shape and back.dtype == t.dtype and back.tolist() == t.tolist()
    assert copy.deepcopy(t).shape == t.shape


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_dtype_and_requires_grad_survive(dtype):
    t = torch.zeros(2, 0, 3, dtype=dtype)
    back = pickle.loads(pickle.dumps(t))
    assert back.shape == (2, 0, 3) and back.dtype == dtype
    w = torch.ones(2, 3, requires_grad=True)
    back = pickle.loads(pickle.dumps(w))
    assert back.requires_grad and back.is_leaf and back.shape == (2, 3)


def test_a_pickle_written_before_keeps_loading():
    from attograd import _tensor

    assert _tensor._rebuild([[1.0, 2.0]], torch.float32, False).shape == (1, 2)
