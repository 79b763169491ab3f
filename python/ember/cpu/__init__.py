"""ember.cpu: CPU-device helpers mirroring torch.cpu (the legacy ember.cpu.amp lives here)."""
from . import amp  # noqa: F401


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """CPU work is synchronous: nothing to wait for."""
