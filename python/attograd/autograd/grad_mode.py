"""Grad mode as torch spells it: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``inference_mode``, each a context manager and a function decorator. Grad mode is per thread,
as torch's. A decorated generator function runs in the mode only while its own code runs: the
caller's mode is back at every ``yield``, as with torch's decorators."""

import functools
import inspect
import warnings

from .. import _C


def _in_context(make_context, gen):
    """A generator that drives ``gen`` with each of its steps inside a fresh context from
    make_context(): next, send, throw and close reach ``gen`` in that mode, and the values it
    yields come back to the caller in the caller's mode."""
    try:
        with make_context():
            value = next(gen)
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                with make_context():
                    gen.close()
                raise
            except BaseException as caught:  # thrown in by the caller: into gen, in its mode
                with make_context():
                    value = gen.throw(caught)
            else:
                with make_context():
                    value = gen.send(sent)
    except StopIteration as done:
        return done.value


class _GradModeContext:
    """A context manager that is also a decorator: the wrapped function runs inside it."""

    def __call__(self, func):
        if inspect.isclass(func):  # torch's deprecation: the class is made inside the context
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You should only decorate "
                "functions or methods. To preserve the current behavior of class decoration, you can directly "
                "decorate the `__init__` method and nothing else.", FutureWarning, stacklevel=2)
            cls = func

            def func(*args, **kwargs):
                return cls(*args, **kwargs)

        make = self.clone
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator(*args, **kwargs):
                return (yield from _in_context(make, func(*args, **kwargs)))

            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with make():
                return func(*args, **kwargs)

        return wrapper

    def _args(self):
        return ()

    def clone(self):
        return self.__class__(*self._args())


class _NoArgsDecorator(_GradModeContext):
    """Also usable without parentheses: ``@no_grad`` as ``@no_grad()`` (torch 2)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoArgsDecorator):
    """Nothing is recorded inside it: results do not require grad (inference, optimizer updates)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_NoArgsDecorator):
    """Recording on again inside a ``no_grad`` block."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_GradModeContext):
    """Grad mode set to ``mode``, from this call on (``set_grad_enabled(False)`` works as a plain
    call too) and back to what it was when used with ``with``."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)

    def _args(self):
        return (self._mode,)

    def __call__(self, func):
        _C._set_grad_enabled(self._prev)  # as a decorator it applies when the function runs
        return super().__call__(func)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class inference_mode(_GradModeContext):
    """torch.inference_mode: attograd has no separate inference tensors, so this is ``no_grad``
    (``mode=False`` leaves grad mode as it is)."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def _args(self):
        return (self._mode,)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        if self._mode:
            _C._set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


is_grad_enabled = _C.is_grad_enabled
