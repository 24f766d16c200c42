"""Hardening, class 11: values out of range that gave an answer instead of an error, and slices
whose step is as large as Python allows. F.one_hot checks its classes as torch does (a class out
of [0, num_classes) gave a row of zeros); a slice counts its elements without overflow (a step of
sys.maxsize gave an empty tensor instead of the first element)."""

import sys

import pytest

import attograd as torch
import attograd.nn.functional as F


@pytest.mark.parametrize("values, num_classes, message", [
    ([5], 3, "Class values must be smaller than num_classes."),
    ([0, 3], 3, "Class values must be smaller than num_classes."),
    ([-2], 3, "Class values must be non-negative."),
    ([-1], -1, "Class values must be non-negative."),
    ([1], 0, "Class values must be smaller than num_classes."),
])
def test_one_hot_refuses_a_class_out_of_range(values, num_classes, message):
    with pytest.raises(RuntimeError, match=message):
        F.one_hot(torch.tensor(values), num_classes)


def test_one_hot_in_range_is_unchanged():
    assert F.one_hot(torch.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(torch.tensor([1, 3])).shape == (2, 4)
    assert F.one_hot(torch.tensor([], dtype=torch.int64), 3).shape == (0, 3)


@pytest.mark.parametrize("step", [sys.maxsize, 2**64, 5, 7])
def test_a_huge_step_takes_the_first_element(step):
    t = torch.arange(5.)
    assert t[::step].tolist() == [0.0]
    assert t[1::step].tolist() == [1.0]
    assert t[5::step].tolist() == []


def test_slices_agree_with_python_lists_near_the_ends():
    values = list(range(11))
    t = torch.tensor(values)
    for start in (None, 0, 3, -2, -sys.maxsize, sys.maxsize):
        for stop in (None, 0, 7, -1, sys.maxsize, -sys.maxsize):
            for step in (1, 2, 3, 10, 11, sys.maxsize - 1, sys.maxsize):
                assert t[start:stop:step].tolist() == values[start:stop:step], (start, stop, step)


def test_the_gradient_of_a_huge_step_slice():
    x = torch.arange(5., requires_grad=True)
    x[::sys.maxsize].sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    y = torch.arange(7., requires_grad=True)
    y[1::3].sum().backward()
    assert y.grad.tolist() == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
