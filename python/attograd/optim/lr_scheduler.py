"""``attograd.optim.lr_scheduler``: the schedulers of optim/lr_scheduler.h with torch's names.
Each steps its C++ scheduler, which computes torch's values step by step; the optimizer's
``param_groups`` dicts see each new lr (and "initial_lr", as torch's)."""

from .. import _C

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
           "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR", "SequentialLR", "ChainedScheduler"]


class LRScheduler:
    def __init__(self, optimizer, make, last_epoch=-1):
        if last_epoch != -1:
            raise NotImplementedError("attograd's schedulers start at epoch 0: last_epoch is not offered")
        self.optimizer = optimizer
        optimizer._push()
        self._cpp = make(optimizer._cpp)
        self._pull()

    def _pull(self):
        cpp = self.optimizer._cpp
        for i, group in enumerate(self.optimizer.param_groups):
            group["lr"] = cpp.get_lr(i)
            initial = cpp.get_initial_lr(i)
            if initial is not None:
                group["initial_lr"] = initial

    def step(self, epoch=None):
        """Moves to the next epoch (call it after optimizer.step())."""
        if epoch is not None:
            raise NotImplementedError("attograd's schedulers step one epoch at a time: step() takes no epoch")
        self.optimizer._push()
        self._cpp.step()
        self._pull()

    def get_last_lr(self):
        """Each group's lr after the last step."""
        return self._cpp.get_last_lr()

    @property
    def last_epoch(self):
        return self._cpp.last_epoch

    @property
    def base_lrs(self):
        return self._cpp.base_lrs


class StepLR(LRScheduler):
    """lr × gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        super().__init__(optimizer, lambda o: _C._StepLR(o, step_size, gamma), last_epoch)


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from the base lr to eta_min over T_max epochs."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        super().__init__(optimizer, lambda o: _C._CosineAnnealingLR(o, T_max, eta_min), last_epoch)


class LinearLR(LRScheduler):
    """The lr's factor goes linearly from start_factor to end_factor over total_iters epochs."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        super().__init__(optimizer, lambda o: _C._LinearLR(o, start_factor, end_factor, total_iters), last_epoch)


class MultiStepLR(LRScheduler):
    """lr × gamma at each of the milestones (epochs)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = list(milestones)
        super().__init__(optimizer, lambda o: _C._MultiStepLR(o, self.milestones, gamma), last_epoch)


class ConstantLR(LRScheduler):
    """lr × factor for the first total_iters epochs, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:  # torch's check and message
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        super().__init__(optimizer, lambda o: _C._ConstantLR(o, factor, total_iters), last_epoch)


class ExponentialLR(LRScheduler):
    """lr × gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        super().__init__(optimizer, lambda o: _C._ExponentialLR(o, gamma), last_epoch)


class PolynomialLR(LRScheduler):
    """lr × (1 − epoch / total_iters)^power, 0 from total_iters on."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        super().__init__(optimizer, lambda o: _C._PolynomialLR(o, total_iters, power), last_epoch)


class MultiplicativeLR(LRScheduler):
    """lr × lr_lambda(epoch) every epoch after the first: one function, or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        fns = _lambdas(optimizer, lr_lambda)
        self.lr_lambdas = fns
        super().__init__(optimizer, lambda o: _C._MultiplicativeLR(o, [lambda e, f=f: float(f(e)) for f in fns]),
                         last_epoch)


def _lambdas(optimizer, lr_lambda):
    """One function per parameter group, with torch's checks."""
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
        fns = list(lr_lambda)
    else:
        fns = [lr_lambda] * len(optimizer.param_groups)
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
    return fns


class LambdaLR(LRScheduler):
    """lr = base_lr × lr_lambda(epoch): one function, or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        fns = _lambdas(optimizer, lr_lambda)
        self.lr_lambdas = fns
        super().__init__(optimizer, lambda o: _C._LambdaLR(o, [lambda e, f=f: float(f(e)) for f in fns]), last_epoch)


class SequentialLR(LRScheduler):
    """schedulers[i] from milestones[i−1] (restarted there) to milestones[i]."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        for s in schedulers:
            if s.optimizer is not optimizer:
                raise ValueError("Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
                                 f"got scheduler {type(s).__name__} with a different optimizer")
        self._schedulers = list(schedulers)
        super().__init__(optimizer, lambda o: _C._SequentialLR(o, [s._cpp for s in schedulers], list(milestones)),
                         last_epoch)


class ChainedScheduler:
    """Steps every scheduler of the list at each step, so that their factors compose (torch's)."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(f"{type(self).__name__} expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(s).__name__} at index {i} has {s.optimizer}, which is different from "
                                 f"{optimizer}.")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self):
        """Steps each scheduler, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return self._last_lr
