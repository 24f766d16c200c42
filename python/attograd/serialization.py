"""``save`` and ``load`` of tensors and state dicts, as safetensors files (the format attograd's
checkpoints use, readable by ``safetensors.torch.load_file``). Unlike torch's pickles, a file
holds tensors only: one Tensor, or a dict from names to Tensors."""

import os
from collections.abc import Mapping

from . import _C

Tensor = _C.Tensor
_KIND = "attograd.object"  # metadata key: what save() was given, so that load() gives it back


def save(obj, f, metadata=None):
    """Writes ``obj`` (a Tensor, or a dict of name → Tensor such as a state_dict) to the path ``f``,
    atomically (a crash leaves the old file or the new one). ``metadata``: str → str, kept in the file."""
    path = _path(f)
    meta = dict(metadata or {})
    if isinstance(obj, Tensor):
        items, meta[_KIND] = [("tensor", obj)], "tensor"
    elif isinstance(obj, Mapping):
        items, meta[_KIND] = [], "dict"
        for name, t in obj.items():
            if not isinstance(name, str) or not isinstance(t, Tensor):
                raise TypeError("attograd.save stores a Tensor or a dict of str -> Tensor, got an entry "
                                f"{type(name).__name__} -> {type(t).__name__}")
            items.append((name, t.detach()))
    else:
        raise TypeError(f"attograd.save stores a Tensor or a dict of str -> Tensor (safetensors), not "
                        f"{type(obj).__name__}")
    _C._save_safetensors(path, items, {str(k): str(v) for k, v in meta.items()})


def load(f, map_location=None, weights_only=True, *, with_metadata=False):
    """Reads a file written by ``save`` (or any safetensors file of float32/float64/int64/bool
    tensors): the Tensor, or the dict of tensors; with ``with_metadata=True`` also the metadata."""
    del map_location, weights_only  # the CPU only; a safetensors file holds nothing but tensors
    tensors, meta = _C._load_safetensors(_path(f))
    kind = meta.pop(_KIND, "dict")
    obj = tensors[0][1] if kind == "tensor" and len(tensors) == 1 else dict(tensors)
    return (obj, meta) if with_metadata else obj


def _path(f):
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(f))
    raise TypeError("attograd.save/load take a path (str or os.PathLike); file objects are not supported")
