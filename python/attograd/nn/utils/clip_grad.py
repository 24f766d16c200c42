"""Gradient clipping on attograd's C++ clip (nn/utils/clip_grad.h), with the GIL released: the
gradients are scaled or clamped in place, so every handle to a .grad sees it."""

from ... import _C

Tensor = _C.Tensor


def _grads_of(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales all gradients by min(1, max_norm / (total_norm + 1e-6)); returns total_norm (a
    0-d float32 tensor, as torch's for float32 gradients), measured before the scaling."""
    del foreach
    params = _grads_of(parameters)
    total = _C._nn_clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)
    dtype = params[0].grad.dtype if params else _C.float32
    return _C._tensor(total, dtype, False)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_ (torch keeps it too)."""
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient element to [-clip_value, clip_value]."""
    del foreach
    _C._nn_clip_grad_value_(_grads_of(parameters), float(clip_value))


def parameters_to_vector(parameters):
    """The parameters flattened into one vector (a copy, differentiable)."""
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copies slices of vec into the parameters, in order."""
    from ...autograd.grad_mode import no_grad

    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(list(p.shape)))
            offset += n
