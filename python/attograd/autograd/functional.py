"""torch.autograd.functional on attograd's function transforms: vjp, jvp, jacobian, hessian,
hvp, vhp. ``func`` returns one Tensor; ``inputs`` is a Tensor or a tuple of them, and the results
follow: a Tensor for a Tensor, tuples for a tuple. Without ``create_graph`` every result is
detached; with ``strict`` an input the output does not depend on raises instead of giving zeros."""

from .. import _C

Tensor = _C.Tensor


def _inputs(inputs):
    single = isinstance(inputs, Tensor)
    return single, [inputs] if single else list(inputs)


def _vs(v, n):
    if v is None:
        return []
    return [v] if isinstance(v, Tensor) else list(v)


def _shape(single, xs):
    return xs[0] if single else tuple(xs)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·J)``; ``v`` shaped like the output (optional for one element)."""
    single, xs = _inputs(inputs)
    out, grads = _C._vjp(func, xs, v, create_graph, strict)
    return out, _shape(single, grads)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J·v)``; ``v`` shaped like the inputs (optional for one element)."""
    single, xs = _inputs(inputs)
    return tuple(_C._jvp(func, xs, _vs(v, len(xs)), create_graph, strict))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """∂func/∂inputs, shaped ``output.shape + input.shape`` (a tuple per input for several)."""
    del vectorize
    if strategy != "reverse-mode":
        raise NotImplementedError("attograd computes the Jacobian in reverse mode only")
    single, xs = _inputs(inputs)
    return _shape(single, _C._jacobian(func, xs, create_graph, strict))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """∂²func/∂inputs², for ``func`` with one element; ``[i][j]`` blocks for several inputs."""
    del vectorize, outer_jacobian_strategy
    single, xs = _inputs(inputs)
    rows = _C._hessian(func, xs, create_graph, strict)
    return rows[0][0] if single else tuple(tuple(r) for r in rows)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H·v)`` for ``func`` with one element."""
    single, xs = _inputs(inputs)
    out, hv = _C._hvp(func, xs, _vs(v, len(xs)), create_graph, strict)
    return out, _shape(single, hv)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·H)`` for ``func`` with one element."""
    single, xs = _inputs(inputs)
    out, vh = _C._vhp(func, xs, _vs(v, len(xs)), create_graph, strict)
    return out, _shape(single, vh)
