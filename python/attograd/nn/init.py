"""``attograd.nn.init``: torch.nn.init's in-place initialisers and formulas (gain, fans, bounds),
drawing from attograd's generator (``manual_seed``), never recorded in the graph. The draws are
attograd's own stream, so values differ from torch's after the same seed; the distributions
are the same."""

import math

from .. import _C

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_",
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
    _no_generator(generator)
    _C._nn_init_uniform_(tensor, a, b)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with N(mean, std²)."""
    _no_generator(generator)
    _C._nn_init_normal_(tensor, mean, std)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) redrawn outside [a, b] (drawn by inverting the normal CDF of a uniform draw, as torch)."""
    _no_generator(generator)
    lo = (1 + math.erf((a - mean) / std / math.sqrt(2))) / 2
    hi = (1 + math.erf((b - mean) / std / math.sqrt(2))) / 2
    from ..autograd.grad_mode import no_grad

    with no_grad():
        u = _C._empty(list(tensor.shape), _C.float64, False)
        _C._nn_init_uniform_(u, 2 * lo - 1, 2 * hi - 1)
        values = (_erfinv(u) * (std * math.sqrt(2)) + mean).clamp(a, b)
        tensor.copy_(values.to(tensor.dtype))
    return tensor


def _erfinv(u):
    # attograd has no erfinv op: element by element in Python (an initialiser, run once).
    values = [_erfinv_scalar(x) for x in u.flatten().tolist()]
    return _C._tensor(values, _C.float64, False).reshape(list(u.shape))


def _erfinv_scalar(y):
    if y <= -1:
        return -math.inf
    if y >= 1:
        return math.inf
    # Newton's method on erf(x) − y from a start on the right side of the root; erf is monotone.
    x = math.copysign(math.sqrt(-math.log((1 - abs(y)) / 2)), y) if abs(y) > 0.7 else y * math.sqrt(math.pi) / 2
    for _ in range(100):
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-15 * max(1.0, abs(x)):
            break
    return x


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
    """U(−b, b), b = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    b = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -b, b, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²), std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(−b, b), b = gain·√(3 / fan); Linear's default is a=√5 (b = 1/√fan_in)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    b = math.sqrt(3.0) * std
    return uniform_(tensor, -b, b, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²), std = gain / √fan."""
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)), generator)


def _no_generator(generator):
    if generator is not None:
        raise NotImplementedError("attograd has no generator= argument: seed with attograd.manual_seed")
