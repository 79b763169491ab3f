"""The accelerator's memory statistics (torch.accelerator.memory): ember.cuda's, for the
current or given device; RuntimeError when there is no accelerator."""

from collections import OrderedDict

__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats"]


def _mod():
    from . import _module

    return _module()


def _idx(device):
    from . import _index

    return _index(device, optional=True)


def _initialized():
    """Whether the accelerator's allocator can hold memory: built, and a device usable."""
    from . import is_available

    return is_available()


def empty_cache() -> None:
    """Releases the unoccupied cached memory of the caching allocator (no-op without one)."""
    if _initialized():
        _mod().empty_cache()


def empty_host_cache() -> None:
    """Releases the unoccupied cached pinned host memory (no-op without an accelerator)."""
    if _initialized():
        release = getattr(_mod(), "_host_empty_cache", None)
        if release is not None:
            release()


def memory_stats(device_index=None, /) -> OrderedDict:
    """The allocator's statistics, flat and sorted by key; empty without an accelerator."""
    if not _initialized():
        return OrderedDict()
    return OrderedDict(sorted(_mod().memory_stats(_idx(device_index)).items()))


def memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    if _initialized():
        _mod().reset_accumulated_memory_stats(_idx(device_index))


def reset_peak_memory_stats(device_index=None, /) -> None:
    if _initialized():
        _mod().reset_peak_memory_stats(_idx(device_index))


def get_memory_info(device_index=None, /):
    """(free, total) bytes of the device."""
    return _mod().mem_get_info(_idx(device_index))
