"""``attograd.nn``: torch.nn's names. ``Module`` is subclassed in Python (parameters and
submodules registered by assigning them); the layers with parameters (``Linear``,
``Embedding``, ``LayerNorm``, ``RMSNorm``, ``MultiheadAttention``) are attograd's C++ modules
as Modules, mixable with Python ones in ``Sequential``, ``ModuleList`` and ``ModuleDict``."""

from . import functional, init, utils
from .modules import (
    BCEWithLogitsLoss, CppModule, CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, Identity, L1Loss, LayerNorm,
    Linear, Unflatten,
    LogSoftmax, Module, ModuleDict, ModuleList, MSELoss, MultiheadAttention, NLLLoss, ReLU, RMSNorm, Sequential,
    Sigmoid, SiLU, Softmax, Tanh,
)
from .parameter import Buffer, Parameter

__all__ = [
    "BCEWithLogitsLoss", "Buffer", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "Identity", "L1Loss",
    "LayerNorm", "Unflatten",
    "Linear", "LogSoftmax", "Module", "ModuleDict", "ModuleList", "MSELoss", "MultiheadAttention", "NLLLoss",
    "Parameter", "ReLU", "RMSNorm", "Sequential", "Sigmoid", "SiLU", "Softmax", "Tanh", "functional", "init", "utils",
]
