"""``attograd.optim``: torch.optim's optimizers and schedulers on attograd's C++ ones."""

from . import lr_scheduler
from .optimizer import Optimizer
from .optimizers import SGD, Adam, AdamW, Muon

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Muon", "lr_scheduler"]
