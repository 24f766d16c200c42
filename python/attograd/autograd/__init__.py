"""attograd.autograd: torch.autograd's names on attograd's engine.

``grad`` and ``backward`` (the engine runs with the GIL released; Python hooks and Functions take
it back), ``Function`` subclassed in Python, the function transforms in ``functional``, the
gradient checks, anomaly mode naming the Python line that made a NaN, and grad mode.
"""

from .. import _C
from . import functional
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "backward", "detect_anomaly", "enable_grad", "functional", "grad",
    "gradcheck", "gradgradcheck", "inference_mode", "is_grad_enabled", "no_grad", "once_differentiable",
    "set_detect_anomaly", "set_grad_enabled", "Variable",
]

Tensor = _C.Tensor


def _tensors(x, name):
    if isinstance(x, Tensor):
        return [x]
    out = list(x)
    for t in out:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be Tensors, got {type(t).__name__}")
    return out


def _grads(g, n, name):
    if g is None:
        return [None] * n
    if isinstance(g, Tensor):
        g = [g]
    g = list(g)
    if len(g) != n:
        raise RuntimeError(f"{name} has {len(g)} entries, but there are {n} outputs")
    return g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` (weighted by ``grad_outputs``, default 1 for one-element
    outputs) with respect to ``inputs``, as a tuple; no ``.grad`` is touched. ``retain_graph``
    defaults to ``create_graph``; an input the outputs do not reach raises unless ``allow_unused``
    (then None) or ``materialize_grads`` (then zeros)."""
    del only_inputs
    if is_grads_batched:
        raise NotImplementedError("attograd.autograd.grad: is_grads_batched is not supported")
    if allow_unused is False and materialize_grads:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    if not ins:  # torch's message
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    result = _C._grad(outs, ins, _grads(grad_outputs, len(outs), "grad_outputs"), retain_graph, create_graph,
                      bool(allow_unused) or materialize_grads, False)
    if materialize_grads:  # zeros for the unused inputs, leaves that require grad under create_graph (torch's)
        from .._factories import zeros_like

        result = [g if g is not None else zeros_like(x).requires_grad_(create_graph) for g, x in zip(result, ins)]
    return tuple(result)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Backpropagates from ``tensors`` into the leaves' ``.grad`` (or into ``inputs`` only)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    roots = _tensors(tensors, "tensors")
    ins = None if inputs is None else _tensors(inputs, "inputs")
    _C._backward(roots, _grads(grad_tensors, len(roots), "grad_tensors"), retain_graph, create_graph, ins)
