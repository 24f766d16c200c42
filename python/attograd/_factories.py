"""Tensors from Python data and the factories, with torch's signatures: sizes as varargs or as one
sequence, ``dtype`` (the default dtype for floats) and ``requires_grad`` as keywords."""

import builtins

from . import _C, _device

Tensor = _C.Tensor


def _size(size, name):
    if len(size) == 1 and not isinstance(size[0], builtins.int):
        return size[0]
    return size


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data``: a number, a (nested) list or tuple of numbers, a
    NumPy array or a Tensor. Floats give the default dtype, ints int64, bools bool."""
    _device.check_device(device)
    if isinstance(data, Tensor):
        t = data.detach().clone()
        if dtype is not None:
            t = t.to(dtype)
        return t.requires_grad_(requires_grad) if requires_grad else t
    if type(data).__module__ == "numpy" and hasattr(data, "dtype") and hasattr(data, "shape"):
        return _from_array_copy(data, dtype, requires_grad)
    return _C._tensor(data, dtype, requires_grad)


def _from_array_copy(array, dtype, requires_grad):
    import numpy as np

    a = np.asarray(array)
    kind = a.dtype.kind
    if kind == "f":
        a = a.astype(np.float64 if a.dtype == np.float64 else np.float32, copy=False)
    elif kind in "iu":
        a = a.astype(np.int64, copy=False)
    elif kind != "b":
        raise TypeError(f"can't convert an array of type {a.dtype} to a tensor")
    t = _C.from_numpy(np.asarray(a, order="C")).clone()  # (ascontiguousarray would make a 0-d array 1-d)
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_(True) if requires_grad else t


def as_tensor(data, dtype=None, device=None):
    """``data`` itself if it is a Tensor of that dtype, a tensor sharing a NumPy array's memory
    when it can, else a copy (torch.as_tensor)."""
    _device.check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if type(data).__module__ == "numpy" and hasattr(data, "dtype") and data.dtype.kind in "fb":
        try:
            t = _C.from_numpy(data)
            return t if dtype is None else t.to(dtype)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros of shape ``size``."""
    _device.check_device(device)
    return _C._zeros(_size(size, "zeros"), dtype, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones of shape ``size``."""
    _device.check_device(device)
    return _C._ones(_size(size, "ones"), dtype, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` whose values are whatever its memory held."""
    _device.check_device(device)
    return _C._empty(_size(size, "empty"), dtype, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (its dtype follows the value's kind)."""
    _device.check_device(device)
    return _C._full(size, fill_value, dtype, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """``start, start + step, ...`` up to ``end`` (excluded); int64 when all three are ints."""
    _device.check_device(device)
    if end is None:
        start, end = 0, start
    return _C._arange(start, end, step, dtype, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values evenly spaced from ``start`` to ``end``, both included."""
    _device.check_device(device)
    return _C._linspace(start, end, steps, dtype, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The ``n`` by ``m`` identity matrix."""
    _device.check_device(device)
    return _C._eye(n, m, dtype, requires_grad)


def _like(factory):
    def like(input, *, dtype=None, device=None, requires_grad=False, **kwargs):  # kwargs: a factory's own (generator=)
        _device.check_device(device)
        return factory(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, **kwargs)

    like.__name__ = factory.__name__ + "_like"
    like.__doc__ = f"attograd.{factory.__name__} of ``input``'s shape and (unless told otherwise) dtype."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    """attograd.full of ``input``'s shape and (unless told otherwise) dtype."""
    _device.check_device(device)
    return full(input.shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)
