"""Anomaly mode names the Python line that made the op whose backward produced NaN, as torch
prints the forward call's traceback."""

import inspect

import pytest

import attograd
from attograd.autograd import Function, detect_anomaly


def here():
    return inspect.currentframe().f_back.f_lineno


def test_nan_in_backward_names_the_python_line():
    x = attograd.tensor([0.0, 1.0], requires_grad=True)
    with detect_anomaly():
        assert attograd.autograd.anomaly_mode.is_anomaly_enabled()
        y = x.sqrt(); line = here()  # noqa: E702 (the op and its line number on one line)
        loss = (y * 0).sum()  # 0 · (1 / 2√0) = NaN in sqrt's backward
        with pytest.raises(RuntimeError) as e:
            loss.backward()
    message = str(e.value)
    assert "function 'sqrt'" in message and "returned nan values in its 0th output" in message
    assert f"{__file__}:{line} in test_nan_in_backward_names_the_python_line" in message
    assert not attograd.autograd.anomaly_mode.is_anomaly_enabled()


def test_the_caller_of_a_python_function_is_named():
    class BadBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("inf")

    x = attograd.tensor([1.0], requires_grad=True)

    @detect_anomaly()
    def run():
        out = BadBackward.apply(x); line = here()  # noqa: E702
        with pytest.raises(RuntimeError, match=f"{__file__}:{line} in run"):
            out.sum().backward()

    run()


def test_outside_anomaly_mode_nan_flows_silently_as_in_torch():
    x = attograd.tensor([0.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().all().item()
