"""torch.cuda as a CPU-only build of torch has it: no device is available, seeding is accepted
(torch defers it until CUDA is first used, which never happens), and what needs a device raises
torch's AssertionError. ``device = "cuda" if torch.cuda.is_available() else "cpu"`` picks the CPU."""

__all__ = [
    "is_available", "device_count", "is_initialized", "init", "current_device", "set_device", "synchronize",
    "get_device_name", "get_device_capability", "get_device_properties", "is_bf16_supported", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "empty_cache", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved",
]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def is_available():
    """False: attograd has no CUDA."""
    return False


def device_count():
    """0 devices."""
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    del including_emulation
    return False


def _needs_a_device(*args, **kwargs):
    del args, kwargs
    raise AssertionError(_NOT_COMPILED)


init = current_device = set_device = synchronize = _needs_a_device
get_device_name = get_device_capability = get_device_properties = _needs_a_device


def manual_seed(seed):
    """Accepted and without effect, as in a CPU-only torch (it would seed CUDA when first used)."""
    del seed


def manual_seed_all(seed):
    """Accepted and without effect, as in a CPU-only torch."""
    del seed


def seed():
    """Accepted and without effect, as in a CPU-only torch."""


def seed_all():
    """Accepted and without effect, as in a CPU-only torch."""


def empty_cache():
    """Nothing is cached: no CUDA memory was ever allocated."""


def memory_allocated(device=None):
    """0 bytes: no CUDA memory (torch's answer before CUDA is initialised)."""
    del device
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated
