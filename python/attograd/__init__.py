"""attograd: a small reverse-mode autograd engine in C++, with PyTorch's Python names.

A PyTorch program within the documented subset runs with ``import torch`` changed to
``import attograd as torch`` (docs/python.md lists what is there and what differs). The tensors
live in attograd's C++ engine; the GIL is released for backward passes and large matrix products.
"""

import builtins as _builtins
import os as _os

from . import _C
from ._C import (
    Tensor, dtype, float32, float64, int64, bool,  # noqa: A004 (torch's names)
    get_default_dtype, set_default_dtype, set_num_threads, get_num_threads,
    is_grad_enabled, from_numpy, from_dlpack, OutOfMemoryError, topk, select, mv, repeat_interleave,
    # the ops as functions
    exp, log, sqrt, rsqrt, reciprocal, tanh, sigmoid, sin, cos, relu, abs, neg, negative, square,
    isnan, isinf, isfinite, add, sub, mul, div, true_divide, pow, maximum, minimum, clamp, clip,
    eq, ne, lt, le, gt, ge, where, masked_fill, logical_not, logical_and, logical_or, logical_xor, tril, triu,
    sum, mean, max, min, amax, amin, argmax, argmin, norm, var, std, logsumexp, all, any, softmax, log_softmax,
    matmul, mm, bmm, dot, reshape, permute, flip, transpose, swapaxes, swapdims, t, unsqueeze, squeeze,
    flatten, unflatten, narrow, chunk, split, unbind, cat, concat, concatenate, stack, index_select, gather,
    scatter_add,
)
from ._size import Size
from ._device import device, set_default_device, get_default_device
from ._tensor import _install
from ._factories import (
    tensor, as_tensor, zeros, ones, empty, full, arange, linspace, eye, zeros_like, ones_like, empty_like, full_like,
)
from ._random import (
    Generator, default_generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state,
    rand, randn, randint, randperm, normal, rand_like, randn_like, randint_like, bernoulli, multinomial,
)
from ._random import _install as _install_random
from .autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode
from .serialization import save, load
from . import autograd
from . import nn, optim
from . import accelerator, backends, cuda, models, study, training

__version__ = _C.__version__

float = float32  # noqa: A001 (torch.float is float32, torch.double float64, torch.long int64)
double = float64
long = int64

_C._set_size_type(Size)
_C._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)
_install()
_install_random()


def is_tensor(obj):
    """True when obj is an attograd Tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    """The number of elements of ``input``."""
    return input.numel()


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when |input − other| ≤ atol + rtol·|other| everywhere (broadcast), as torch.allclose."""
    return isclose(input, other, rtol, atol, equal_nan).all().item()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where |input − other| ≤ atol + rtol·|other| (a bool tensor), as torch.isclose."""
    with no_grad():
        a = input.double()
        b = other.double() if isinstance(other, Tensor) else tensor(other, dtype=float64)
        close = (a - b).abs() <= atol + rtol * b.abs()
        close = close | (a == b)  # equal infinities
        if equal_nan:
            close = close | (a.isnan() & b.isnan())
        return close


def equal(input, other):
    """True when both have the same shape and the same values."""
    return input.shape == other.shape and _builtins.bool((input == other).all().item())


def is_floating_point(input):
    """True for float32 and float64 tensors."""
    return input.is_floating_point()


def clone(input):
    """A copy of ``input`` (differentiable)."""
    return input.clone()


def detach(input):
    """``input`` without its history, sharing its memory."""
    return input.detach()


def numpy_available():
    """Whether NumPy can be imported (Tensor.numpy and from_numpy need it)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


del _os
