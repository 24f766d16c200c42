"""``attograd.optim.lr_scheduler``: the schedulers of optim/lr_scheduler.h with torch's names.
Each steps its C++ scheduler, which computes torch's values step by step; the optimizer's
``param_groups`` dicts see each new lr (and "initial_lr", as torch's)."""

from .. import _C

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "LinearLR", "LambdaLR", "SequentialLR"]


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


class LambdaLR(LRScheduler):
    """lr = base_lr × lr_lambda(epoch): one function, or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * len(optimizer.param_groups)
        if len(fns) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(fns)}")
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
