"""``nn.Parameter``: a Tensor that a Module registers as its parameter when it is assigned as an
attribute. It is a Python subclass of Tensor, so it keeps its class through C++: the same
tensor always comes back as the same Parameter object. ``nn.Buffer``: a tensor marked to be
registered as a buffer when assigned."""

from .. import _C

Tensor = _C.Tensor


class Parameter(Tensor):
    """A tensor sharing ``data``'s memory (without its history) that requires grad, as torch's."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C._empty([0], None, False)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(data): data must be a Tensor, got {type(data).__name__}")
        super().__init__(data)
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = r
        return r

    def __reduce_ex__(self, protocol):
        del protocol
        return (_rebuild_parameter, (self.detach().tolist(), self.dtype, self.requires_grad))


class _BufferMeta(type):
    # isinstance(t, Buffer): a tensor Buffer(...) marked, as torch's.
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """torch.nn.Buffer(data, persistent=True): ``data`` detached (keeping its requires_grad), marked
    so that assigning it to a Module attribute registers it as a buffer (in the state_dict when
    persistent). It is a Tensor, as torch's; ``isinstance(t, nn.Buffer)`` tells the marked ones."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C._empty([0], None, False)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def _rebuild_parameter(values, dtype, requires_grad):
    from .._factories import tensor

    return Parameter(tensor(values, dtype=dtype), requires_grad)


def as_parameter(t):
    """The Parameter for ``t``: ``t`` itself, its class changed in place when C++ made it (a C++
    layer's weight), so that every handle to that tensor, in C++ and in Python, is the Parameter."""
    if isinstance(t, Parameter):
        return t
    if type(t) is not Tensor:
        raise TypeError(f"cannot make a Parameter of a {type(t).__name__}")
    t.__class__ = Parameter
    return t
