"""``attograd.nn.init``: torch.nn.init's in-place initialisers and formulas (gain, fans, bounds),
never recorded in the graph. They draw from torch's generator as torch's do (``manual_seed``, or
``generator=``), with the same bounds computed the same way: after the same seed, torch's values."""

import math
import warnings

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "sparse_",
]


def calculate_gain(nonlinearity, param=None):
    """torch's recommended gain for a nonlinearity."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills tensor with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) with the values outside [a, b] drawn again, by torch 2's algorithm (so the
    same draws): when at least 30% of the mass is inside, whole fresh normal_ tensors replace the
    values outside until none is; else uniform candidates in [a, b], each accepted with its density
    over the peak's (one more uniform draw each), the rejected ones drawn again."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            lo = _C._tensor(a, tensor.dtype, False).item()  # the bounds in the tensor's dtype
            hi = _C._tensor(b, tensor.dtype, False).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < lo) | (result > hi)
                if not outside.any().item():
                    break
                fresh = _C._empty(list(result.shape), result.dtype, False).normal_(mean, std, generator=generator)
                result = _C.where(outside, fresh, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_density(x):  # the log density over the peak's
            return ((x - mean) / std) ** 2 * -0.5 - log_peak

        def rejected(x):
            return _C._empty(list(x.shape), x.dtype, False).uniform_(generator=generator).log() > log_density(x)

        tensor.uniform_(a, b, generator=generator)
        pending = rejected(tensor)
        result = tensor
        while pending.any().item():
            candidates = _C._empty(list(tensor.shape), tensor.dtype, False).uniform_(a, b, generator=generator)
            result = _C.where(pending, candidates, result)
            pending = _C.where(pending, rejected(candidates), pending)
        if result is not tensor:
            tensor.copy_(result)
        return tensor


def constant_(tensor, val):
    from ..autograd.grad_mode import no_grad

    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..autograd.grad_mode import no_grad

    with no_grad():
        tensor.copy_(_C._eye(tensor.shape[0], tensor.shape[1], tensor.dtype, False))
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(−b, b), b = √3·gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    b = math.sqrt(3.0) * std
    return uniform_(tensor, -b, b, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²), std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(−b, b), b = gain·√(3 / fan); Linear's default is a=√5 (b = 1/√fan_in)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    b = math.sqrt(3.0) * std
    return uniform_(tensor, -b, b, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²), std = gain / √fan."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)), generator)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with a fraction ``sparsity`` of each column's entries zero (chosen by randperm of
    the default generator, as torch's do)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._random import randperm

    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = randperm(rows)[:num_zeros]
            tensor[:, col][zero_rows] = 0
    return tensor
