"""Which library runs attograd's float32 GEMMs: OpenBLAS (the library's default) or oneDNN
(autograd/kernels/gemm_provider.h). ``attograd train`` and ``attograd.training.train`` choose
with ``gemm="auto"``: both providers timed at the model's own GEMM shapes, once per machine. A
training loop written in Python runs on whatever is set here, so to run the command's step,
choose as it does::

    attograd.backends.set_gemm_provider("auto", model=model, tokens=batch * block)

The choice is process-wide (every thread); set it while no GEMM runs.

``mps``, ``cuda`` and ``cudnn`` are torch.backends' namespaces as a CPU-only torch has them:
nothing is available, and the flags programs set (``cuda.matmul.allow_tf32 = True``) are kept
and change nothing."""

import types as _types

from . import _C

__all__ = ["get_gemm_provider", "set_gemm_provider", "gemm_providers", "mps", "cuda", "cudnn"]


def _namespace(name, doc, **members):
    module = _types.ModuleType(__name__ + "." + name, doc)
    module.__dict__.update(members)
    return module


def _false():
    return False


mps = _namespace("mps", "torch.backends.mps: no Metal device here.", is_available=_false, is_built=_false)
cuda = _namespace("cuda", "torch.backends.cuda: not built with CUDA; its flags are kept and change nothing.",
                  is_built=_false,
                  matmul=_types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                                allow_bf16_reduced_precision_reduction=True))
cudnn = _namespace("cudnn", "torch.backends.cudnn: not available; its flags are kept and change nothing.",
                   is_available=_false, enabled=True, benchmark=False, deterministic=False, allow_tf32=True)


def get_gemm_provider():
    """"openblas" or "onednn": the provider of every float32 GEMM now."""
    return _C._gemm_provider()


def gemm_providers():
    """{name: None if it runs here, else why not} for each provider."""
    return _C._gemm_providers()


def set_gemm_provider(name, model=None, tokens=None):
    """Sets the provider: "openblas", "onednn", or "auto" (the faster at ``model``'s shapes, a
    language model from attograd.models, with ``tokens`` positions per step; the command's
    measurement and per-machine record). Returns how it was chosen, as the run header says it."""
    from .models import LanguageModel

    if model is not None and not isinstance(model, LanguageModel):
        raise TypeError(f"set_gemm_provider: model must be a language model from attograd.models, got "
                        f"{type(model).__name__}")
    return _C._set_gemm_provider(name, model._cpp if model is not None else None, int(tokens) if tokens is not None else 0)
