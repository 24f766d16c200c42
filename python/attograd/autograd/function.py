"""``autograd.Function`` subclassed in Python, as torch's: static ``forward(ctx, *args)`` and
``backward(ctx, *grad_outputs)``, called through ``apply``.

``forward`` runs under no_grad; its outputs get one node of the graph, named after the class
(``grad_fn.name()`` is ``"MyFnBackward"``). ``backward`` gets one gradient per output and
returns one per forward argument (None for an argument that needs none); it runs in grad mode
when the backward pass is recorded (``create_graph=True``), so a backward written with attograd
ops can be differentiated again. Tensors that backward needs go through ``ctx.save_for_backward``,
which checks them for in-place changes and frees them after backward; anything else can be an
attribute of ``ctx``. (A tensor the function made, stored as an attribute, would tie the graph to
itself: use ``save_for_backward`` for those.)
"""

from .. import _C


class FunctionCtx:
    """The ``ctx`` of a Function: what forward hands to backward."""

    def __init__(self, cpp, needs_input_grad):
        self._cpp = cpp
        self.needs_input_grad = needs_input_grad
        """One bool per forward argument: does it need a gradient (False for non-Tensors)."""

    def save_for_backward(self, *tensors):
        """Tensors (or None) that backward reads back from ``ctx.saved_tensors``."""
        self._cpp.save_for_backward(*tensors)

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward, in order (in backward only)."""
        return self._cpp.saved_tensors

    def mark_non_differentiable(self, *outputs):
        """These outputs get no gradient: they do not require grad, and backward sees zeros for them."""
        self._cpp.mark_non_differentiable(*outputs)

    def set_materialize_grads(self, value):
        """False: backward gets None, not zeros, for an output that got no gradient."""
        self._cpp.set_materialize_grads(value)

    def mark_dirty(self, *tensors):
        raise NotImplementedError(
            "attograd records no in-place op, so a Function cannot modify its inputs in place (mark_dirty); "
            "return a new tensor instead")


class Function:
    """Base class of custom differentiable functions; subclasses define the static methods
    ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` and are called as ``F.apply(*args)``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply takes positional arguments only (as torch's)")
        return _C._function_apply(cls, FunctionCtx, *args)


class once_differentiable:
    """torch.autograd.function.once_differentiable: the backward runs without recording (its result
    cannot be differentiated again)."""

    def __new__(cls, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(ctx, *args):
            with _C_no_grad():
                return fn(ctx, *args)

        return wrapper


def _C_no_grad():
    from .grad_mode import no_grad

    return no_grad()
