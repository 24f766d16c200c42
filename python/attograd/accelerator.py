"""torch.accelerator as a CPU-only build of torch has it: no accelerator, so
``torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"``
picks the CPU."""

__all__ = ["is_available", "current_accelerator", "device_count"]


def is_available():
    """False: attograd computes on the CPU only."""
    return False


def current_accelerator(check_available=False):
    """None: no accelerator was built in."""
    del check_available
    return None


def device_count():
    """0 accelerator devices."""
    return 0
