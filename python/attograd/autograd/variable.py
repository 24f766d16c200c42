"""``torch.autograd.Variable``, the name older programs still use: every Tensor is a Variable
(``isinstance(t, Variable)`` is True for any tensor), and ``Variable(t, requires_grad=...)``
gives a new leaf on ``t``'s memory, as torch's."""

import warnings

from .. import _C


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """Not a class of its own since torch 0.4: calling it makes a leaf tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:  # torch's warning
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            from .._factories import empty

            data = empty(0)
        elif not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
