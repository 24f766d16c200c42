"""The Modules of attograd.nn."""

from .activation import GELU, Dropout, Identity, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .flatten import Flatten, Unflatten
from .cpp import CppModule, Embedding, LayerNorm, Linear, MultiheadAttention, RMSNorm, wrap_cpp_module
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
