"""torch.autograd.gradcheck and gradgradcheck on attograd's checker: float64 inputs, central
differences against the analytic Jacobian, |analytic − numeric| ≤ atol + rtol·|numeric|.
A function with several outputs is checked as one output, their values concatenated."""

from .. import _C

Tensor = _C.Tensor


class GradcheckError(RuntimeError):
    """A gradient check failed; the message has the table of errors per input."""


def _as_list(inputs):
    return [inputs] if isinstance(inputs, Tensor) else list(inputs)


def _one_output(func):
    def f(*xs):
        out = func(*xs)
        if isinstance(out, Tensor):
            return out
        parts = [o.reshape(-1) for o in out if isinstance(o, Tensor) and o.dtype.is_floating_point]
        return _C.cat(parts, 0) if len(parts) > 1 else parts[0]

    return f


def _check(kind, passed, table, raise_exception):
    if passed:
        return True
    if raise_exception:
        raise GradcheckError(f"{kind} failed: the analytic gradient does not match the numerical one\n{table}")
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    """True when ``func``'s gradients with respect to the inputs that require grad match central
    differences; else raises GradcheckError (or returns False with ``raise_exception=False``)."""
    del unused  # torch's other switches (check_undefined_grad, fast_mode, ...) have no counterpart
    passed, table = _C._gradcheck(_one_output(func), _as_list(inputs), eps, atol, rtol)
    return _check("Gradcheck", passed, table, raise_exception)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, seed=2024, **unused):
    """The second-order check: the gradients, as functions of the inputs and of a random upstream
    gradient, are gradchecked (their analytic side is a double backward)."""
    del unused, gen_non_contig_grad_outputs
    if grad_outputs is not None:
        raise NotImplementedError("attograd's gradgradcheck draws its own grad_outputs (seeded by seed=)")
    passed, table = _C._gradgradcheck(_one_output(func), _as_list(inputs), eps, atol, rtol, seed)
    return _check("Gradgradcheck", passed, table, raise_exception)
