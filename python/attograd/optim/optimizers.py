"""SGD, Adam, AdamW and Muon with torch's keyword arguments and defaults (the updates are
attograd's C++ ones: optim/sgd.h, adam.h, muon.h say how each matches torch's)."""

from .. import _C
from .optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "Muon"]


def _check(lr=0.0, eps=0.0, betas=None, weight_decay=0.0, momentum=0.0):
    """torch's checks of the hyper-parameters, in its words (Python's repr of the value), before
    the C++ optimizer's own."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= momentum:
        raise ValueError(f"Invalid momentum value: {momentum}")
    for i, beta in enumerate(betas or ()):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _unsupported(**flags):
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"attograd's optimizers have no {name}=True")


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, weight decay, Nesterov."""

    _cpp_class = _C._SGD

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _unsupported(maximize=maximize, differentiable=differentiable, fused=fused)
        _check(lr=lr, momentum=momentum, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))


class Adam(Optimizer):
    """torch.optim.Adam: weight decay as an L2 term of the gradient; amsgrad."""

    _cpp_class = _C._Adam

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _unsupported(maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused)
        _check(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))


class AdamW(Optimizer):
    """torch.optim.AdamW: decoupled weight decay (1e-2 by default) on every parameter of the group."""

    _cpp_class = _C._AdamW

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        _unsupported(maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused)
        _check(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))


class Muon(Optimizer):
    """torch.optim.Muon (torch ≥ 2.9), for 2-d parameters: momentum, Newton–Schulz orthogonalisation,
    decoupled weight decay. Its iteration runs in the parameter's dtype (torch's in bfloat16)."""

    _cpp_class = _C._Muon

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-07, ns_steps=5, adjust_lr_fn=None):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))
