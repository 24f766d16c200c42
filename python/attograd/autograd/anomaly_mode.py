"""Anomaly mode (torch.autograd.detect_anomaly): inside it, each op keeps the Python frames that
called it, and a backward that produces NaN or infinity raises RuntimeError naming the op and
that Python line."""

import functools

from .. import _C


class detect_anomaly:
    """Context manager (and decorator) turning anomaly mode on for this thread."""

    def __init__(self, check_nan=True):
        if not check_nan:
            raise NotImplementedError("attograd's anomaly mode always checks for NaN (check_nan=False)")
        self._guard = None

    def __enter__(self):
        self._guard = _C._AnomalyGuard()
        self._guard.enter()
        return self

    def __exit__(self, *exc):
        self._guard.exit()
        self._guard = None
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly():
                return func(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Anomaly mode on or off (``mode``) inside it."""

    def __init__(self, mode, check_nan=True):
        del check_nan
        self._mode = bool(mode)
        self._guard = None

    def __enter__(self):
        if self._mode:
            self._guard = _C._AnomalyGuard()
            self._guard.enter()
        return self

    def __exit__(self, *exc):
        if self._guard is not None:
            self._guard.exit()
        return False


is_anomaly_enabled = _C.is_anomaly_enabled
