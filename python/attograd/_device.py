"""The one function every ``device=`` argument goes through: the factories, ``Tensor.to``,
``Module.to``, the nn modules' constructors and ``attograd.device`` itself. attograd computes on
the CPU only, so a CPU device (any index) passes and anything else is refused before any work,
with what a CPU-only build of torch raises: ``AssertionError("Torch not compiled with CUDA
enabled")`` for CUDA, torch's ``RuntimeError`` texts for a device string torch cannot parse, its
``TypeError`` for an argument that is no device at all."""

import builtins

# torch's device types (c10/core/DeviceType.h), in the order its parsing error lists them.
_TORCH_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def parse(spec, index=None):
    """``(type, index)`` of a device string, a device object or an int (a CUDA ordinal, as torch
    reads it), with torch's errors for one it cannot parse. Nothing is refused for its type here."""
    if isinstance(spec, builtins.bool) or isinstance(index, builtins.bool):
        raise TypeError(f"argument 'device' must be torch.device, not {type(spec).__name__}")
    if hasattr(spec, "type") and hasattr(spec, "index") and not isinstance(spec, (builtins.str, bytes)):
        return _with_index(spec.type, spec.index, index, f"{spec.type}:{spec.index}")
    if isinstance(spec, builtins.int):
        return _with_index("cuda", spec, index, builtins.str(spec))
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8", "replace")
    if not isinstance(spec, builtins.str):
        raise TypeError(f"argument 'device' must be torch.device, not {type(spec).__name__}")
    if not spec:
        raise RuntimeError("Device string must not be empty")
    # c10's grammar: ([a-zA-Z_]+)(?::([1-9]\d*|0))?
    name, colon, number = spec.partition(":")
    valid_name = name and builtins.all(c == "_" or ("a" <= c.lower() <= "z") for c in name)
    valid_number = not colon or (number.isascii() and number.isdigit() and (number == "0" or number[0] != "0"))
    if not valid_name or not valid_number:
        raise RuntimeError(f"Invalid device string: '{spec}'")
    if name not in _TORCH_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_TYPES)} device type at start of device string: {spec}")
    if colon and index is not None:
        raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {spec}")
    return _with_index(name, builtins.int(number) if colon else None, index, spec)


def _with_index(type_, own, given, spec):
    index = given if given is not None else own
    if index is not None:
        if not isinstance(index, builtins.int):
            raise TypeError(f"device(): index must be an int, not {type(index).__name__}")
        if index < 0:
            raise RuntimeError("Device index must not be negative")
        if index >= 2**63:
            raise RuntimeError(f"Could not parse device index '{index}' in device string '{spec}'")
    return type_, index


def check(device):
    """``device`` (anything a ``device=`` argument takes, or None) as attograd uses it: None, or
    ``"cpu"`` when it names the CPU. Anything else raises, as a CPU-only torch does."""
    if device is None:
        return None
    type_, _ = parse(device)
    refuse(type_)
    return "cpu"


def refuse(type_):
    """Raises for any device type but the CPU's (a device attograd cannot compute on)."""
    if type_ == "cpu":
        return
    if type_ == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    raise RuntimeError(f"attograd computes on the CPU only: there is no '{type_}' device (use 'cpu')")
