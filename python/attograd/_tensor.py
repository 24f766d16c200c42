"""The Tensor methods written in Python, attached to the C++ class at import: printing, ``to`` and
the dtype shorthands, ``new_*``, the device surface of a CPU-only torch (``cpu``, ``cuda``,
``pin_memory``), pickling."""

import builtins

from . import _C
from ._device import CPU, check_device, device  # noqa: F401 (device: attograd.device)
from ._tensor_str import tensor_repr

Tensor = _C.Tensor


def _to(self, *args, dtype=None, device=None, copy=False, non_blocking=False):
    """``t.to(dtype)``, ``t.to(other)``, ``t.to("cpu")``, ``t.to(device, dtype)``: a converted tensor,
    or this one when nothing changes (unless ``copy=True``)."""
    del non_blocking  # nothing is asynchronous on the CPU
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, _C.dtype) or a in (builtins.float, builtins.int, builtins.bool):
            dtype = a
        else:
            check_device(a)  # the CPU, or what a CPU-only torch raises
    if device is not None:
        check_device(device)
    return self._to_dtype(self.dtype if dtype is None else dtype, copy)


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    """Tensor.cuda() of a CPU-only torch: it raises."""
    del device, non_blocking, memory_format
    raise AssertionError("Torch not compiled with CUDA enabled")


def _pin_memory(self, device=None):
    """Tensor.pin_memory() of a CPU-only torch: pinned memory needs an accelerator, so it raises."""
    del device
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _new_tensor(self, data, dtype=None, requires_grad=False):
    from ._factories import tensor

    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_factory(name):
    def method(self, *size, dtype=None, requires_grad=False, **kwargs):
        from . import _factories

        return getattr(_factories, name)(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, **kwargs)

    method.__name__ = "new_" + name
    method.__doc__ = f"A new tensor made by attograd.{name}, of this tensor's dtype unless told otherwise."
    return method


def _reduce_ex(self, protocol):
    # Pickled as its values (a copy), as a NumPy array would be: enough for multiprocessing and
    # copy.deepcopy. The values go flat beside the shape, which nested lists cannot carry past a
    # zero-size dim ((2, 0, 3) nests as [[], []]).
    del protocol
    return (_rebuild_shaped, (self.detach().reshape(-1).tolist(), tuple(self.shape), self.dtype, self.requires_grad))


def _rebuild_shaped(values, shape, dtype, requires_grad):
    from ._factories import tensor

    t = tensor(values, dtype=dtype).reshape(shape).clone()  # its own storage, not a view
    return t.requires_grad_(True) if requires_grad else t


def _rebuild(values, dtype, requires_grad):
    # Pickles written before the shape was kept (nested values).
    from ._factories import tensor

    return tensor(values, dtype=dtype, requires_grad=requires_grad)


def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.")
    r = self.detach().clone()
    r.requires_grad_(self.requires_grad)
    memo[id(self)] = r
    return r


def _format(self, spec):
    if self.dim() == 0 and spec:
        return self.item().__format__(spec)
    return builtins.object.__format__(repr(self), spec)


def _install():
    T = Tensor
    T.__repr__ = lambda self: tensor_repr(self)
    T.__str__ = lambda self: repr(self)  # a subclass's own __repr__ too
    T.__format__ = _format
    T.to = _to
    T.double = lambda self: self._to_dtype(_C.float64, False)
    T.float = lambda self: self._to_dtype(_C.float32, False)
    T.long = lambda self: self._to_dtype(_C.int64, False)
    T.bool = lambda self: self._to_dtype(_C.bool, False)
    T.cpu = lambda self, memory_format=None: self
    T.cuda = _cuda
    T.device = property(lambda self: CPU)
    T.is_cuda = property(lambda self: False)
    T.is_cpu = property(lambda self: True)
    T.is_mps = property(lambda self: False)
    T.is_meta = property(lambda self: False)
    T.get_device = lambda self: -1  # torch's answer for a CPU tensor
    T.is_pinned = lambda self, device=None: False
    T.pin_memory = _pin_memory
    T.new_tensor = _new_tensor
    for name in ("zeros", "ones", "empty", "full"):
        setattr(T, "new_" + name, _new_factory(name))
    T.__reduce_ex__ = _reduce_ex
    T.__deepcopy__ = _deepcopy
    T.__array_ufunc__ = None  # NumPy's operators defer to Tensor's (np.float64(2) * t is a Tensor)
