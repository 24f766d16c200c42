"""``autograd.Function`` subclassed in Python, as torch's: static ``forward(ctx, *args)`` and
``backward(ctx, *grad_outputs)``, called through ``apply`` (or torch 2's style: ``forward(*args)``
with a static ``setup_context(ctx, inputs, output)`` that fills ``ctx``).

``forward`` runs under no_grad; its outputs get one node of the graph, named after the class
(``grad_fn.name()`` is ``"MyFnBackward"``). ``backward`` gets one gradient per output and
returns one per forward argument (None for an argument that needs none); it runs in grad mode
when the backward pass is recorded (``create_graph=True``), so a backward written with attograd
ops can be differentiated again. Tensors that backward needs go through ``ctx.save_for_backward``,
which checks them for in-place changes and frees them after backward; anything else can be an
attribute of ``ctx``. (A tensor the function made, stored as an attribute, would tie the graph to
itself: use ``save_for_backward`` for those.)
"""

import functools
import inspect
import warnings

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
        """These inputs were modified in place by forward, which returns them: each output is the
        input itself, its history now going through this function (a leaf that requires grad
        cannot be one, as in torch)."""
        self._cpp.mark_dirty(*tensors)


class Function:
    """Base class of custom differentiable functions; subclasses define the static methods
    ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` and are called as ``F.apply(*args)``.
    With ``setup_context`` defined too, ``forward(*args)`` takes no ctx (torch 2's style)."""

    generate_vmap_rule = False  # torch's flag; attograd has no vmap to generate a rule for

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so you "
            "should invoke them on the class itself. Instantiating an autograd function will raise an error in a "
            "future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD (attograd has no forward mode AD).")

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("attograd has no vmap: autograd.Function.vmap is not supported")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = _defines_setup_context(cls)
        if kwargs:  # bound to forward's positional parameters, defaults filled in, as torch's
            signature = inspect.signature(cls.forward)
            bound = (signature.bind(*args, **kwargs) if setup else signature.bind(None, *args, **kwargs))
            bound.apply_defaults()
            args = bound.args if setup else bound.args[1:]
        return _C._function_apply(cls, FunctionCtx, setup, *args)


def _defines_setup_context(cls):
    """Does cls override setup_context (so that its forward takes no ctx)?"""
    return inspect.getattr_static(cls, "setup_context") is not inspect.getattr_static(Function, "setup_context")


class once_differentiable:
    """torch.autograd.function.once_differentiable: the backward runs without recording (its result
    cannot be differentiated again)."""

    def __new__(cls, fn):
        @functools.wraps(fn)
        def wrapper(ctx, *args):
            with _C_no_grad():
                return fn(ctx, *args)

        return wrapper


def _C_no_grad():
    from .grad_mode import no_grad

    return no_grad()
