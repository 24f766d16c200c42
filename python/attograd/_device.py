"""Devices, as a CPU-only build of torch has them: ``torch.device`` names any device torch knows,
but attograd computes on the CPU only, so a tensor asked for anywhere else raises what a CPU-only
torch raises there, before any work is done. ``check_device`` is the one check every ``device=``
argument goes through."""

import builtins

__all__ = ["device", "check_device", "set_default_device", "get_default_device"]

# The device types torch's device strings may start with, in torch's order (its error lists them).
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
          "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """torch.device: a device type and an optional index (``device("cuda:1")``, ``device("cpu")``,
    ``device("cuda", 0)``, ``device(0)`` for CUDA device 0). Making one checks only its spelling;
    putting a tensor on a device other than the CPU raises (``check_device``)."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):  # noqa: A002 (torch's names)
        type, index = _parse(type, index)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented  # torch: a device never equals a string
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (str(self),))


def _parse(spec, index=None):
    """``(type, index)`` of a device string, a device, or an int (a CUDA ordinal, as torch reads
    it), with torch's errors for one it cannot parse. Nothing is refused for its type here."""
    if isinstance(spec, builtins.bool) or isinstance(index, builtins.bool):
        raise TypeError(f"argument 'device' must be torch.device, not {builtins.type(spec).__name__}")
    if hasattr(spec, "type") and hasattr(spec, "index") and not isinstance(spec, (builtins.str, bytes)):
        return _with_index(spec.type, spec.index, index, f"{spec.type}:{spec.index}")  # ours, or torch's own
    if isinstance(spec, builtins.int):
        return _with_index("cuda", spec, index, builtins.str(spec))  # torch.device(0) is CUDA device 0
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8", "replace")
    if not isinstance(spec, builtins.str):
        raise TypeError(f"device() received an invalid combination of arguments - got ({builtins.type(spec).__name__})")
    if not spec:
        raise RuntimeError("Device string must not be empty")
    # c10's grammar: ([a-zA-Z_]+)(?::([1-9]\d*|0))?
    name, colon, number = spec.partition(":")
    valid_name = name and builtins.all(c == "_" or ("a" <= c.lower() <= "z") for c in name)
    valid_number = not colon or (number.isascii() and number.isdigit() and (number == "0" or number[0] != "0"))
    if not valid_name or not valid_number:
        raise RuntimeError(f"Invalid device string: '{spec}'")
    if name not in _TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {spec}")
    if colon and index is not None:
        raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {spec}")
    return _with_index(name, builtins.int(number) if colon else None, index, spec)


def _with_index(type_, own, given, spec):
    index = given if given is not None else own
    if index is not None:
        if not isinstance(index, builtins.int):
            raise TypeError(f"device(): index must be an int, not {builtins.type(index).__name__}")
        if index < 0:
            raise RuntimeError("Device index must not be negative")
        if index >= 2**63:
            raise RuntimeError(f"Could not parse device index '{index}' in device string '{spec}'")
    return type_, index


CPU = device("cpu")

# What a CPU-only torch raises when a tensor is asked for on a device it was not built for: the
# accelerators with a lazy initialisation raise AssertionError from it, the others RuntimeError.
_NOT_COMPILED = {"cuda": "CUDA", "xpu": "XPU"}

_default = CPU


def check_device(where):
    """The device a ``device=`` argument names, if attograd can put a tensor there: None (the
    default device, ``set_default_device``) or the CPU (any index) give ``device("cpu")``;
    anything else raises what a CPU-only torch raises for it."""
    if where is not None and not isinstance(where, (builtins.str, bytes, builtins.int)) and not (
            hasattr(where, "type") and hasattr(where, "index")):  # ours, or torch's own
        raise TypeError(f"argument 'device' must be torch.device, not {builtins.type(where).__name__}")
    d = _default if where is None else device(where)
    if d.type == "cpu":
        return CPU
    if d.type in _NOT_COMPILED:
        raise AssertionError(f"Torch not compiled with {_NOT_COMPILED[d.type]} enabled")
    raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")


def set_default_device(where):
    """torch.set_default_device: the device the factories use when given none. Any device may be
    named; a factory then raises for one other than the CPU, as a CPU-only torch's does."""
    global _default
    _default = CPU if where is None else device(where)


def get_default_device():
    """torch.get_default_device."""
    return _default
