"""CUDA caching-allocator statistics and controls (see torch.cuda.memory).

Without a GPU the statistics are those of an allocator that never allocated
(zeros, an empty ``memory_stats()``), the cache controls are no-ops, and the
calls that need a device (``mem_get_info``, ``set_per_process_memory_fraction``)
raise the RuntimeError of ``ember.cuda._lazy_init``.
"""
from __future__ import annotations

import collections
import pickle


def _ready():
    from . import is_available
    return is_available()


def _b():
    from . import _lazy_init
    _lazy_init()
    from . import _backend
    return _backend


def _idx(device):
    from . import _device_index
    return _device_index(device)


def memory_stats(device=None) -> dict:
    """Flat ``"allocated_bytes.all.current"``-style statistics (PyTorch's keys)."""
    if not _ready():
        return collections.OrderedDict()
    nested = _b().memory_stats(_idx(device))
    return collections.OrderedDict(sorted(nested.items()))


def memory_stats_as_nested_dict(device=None) -> dict:
    out = {}
    for k, v in memory_stats(device).items():
        d = out
        parts = k.split(".")
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return out


def memory_allocated(device=None) -> int:
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None) -> None:
    if _ready():
        _b().reset_peak_memory_stats(_idx(device))


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    if _ready():
        _b().reset_accumulated_memory_stats(_idx(device))


def empty_cache() -> None:
    """Returns the allocator's cached, unused blocks to the driver (no-op without a GPU)."""
    if _ready():
        _b().empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of device memory, from cudaMemGetInfo."""
    b = _b()
    return tuple(b.mem_get_info(_idx(device)))


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Caps this process's allocations on ``device`` at ``fraction`` of its total memory."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _b().set_memory_fraction(_idx(device), fraction)


def get_per_process_memory_fraction(device=None) -> float:
    return float(_b().get_memory_fraction(_idx(device)))


def caching_allocator_alloc(size, device=None, stream=None):
    raise RuntimeError("caching_allocator_alloc: raw allocations are not exposed by ember; "
                       "allocate a tensor instead")


def caching_allocator_delete(mem_ptr):
    raise RuntimeError("caching_allocator_delete: raw allocations are not exposed by ember")


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n}"


def memory_summary(device=None, abbreviated=False) -> str:
    """A human-readable table of the allocator statistics (zeros without a GPU)."""
    stats = memory_stats(device)
    rows = [("Allocated memory", "allocated_bytes"), ("Active memory", "active_bytes"),
            ("GPU reserved memory", "reserved_bytes"), ("Non-releasable memory", "inactive_split_bytes")]
    counts = [("Allocations", "allocation"), ("Active allocs", "active"),
              ("GPU reserved segments", "segment")]
    width = 75
    lines = ["|" + "=" * width + "|",
             "|" + " PyTorch-style CUDA memory summary (ember), device ID "
             + (str(_idx(device)) if _ready() else "n/a") + " ".ljust(1),
             "|" + "-" * width + "|",
             f"|  CUDA OOMs: {stats.get('num_ooms', 0):<12}|  cudaMalloc retries: {stats.get('num_alloc_retries', 0):<10}",
             "|" + "=" * width + "|",
             "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
             "|" + "-" * width + "|"]
    for label, key in rows:
        cur = stats.get(f"{key}.all.current", 0)
        peak = stats.get(f"{key}.all.peak", 0)
        alloc = stats.get(f"{key}.all.allocated", 0)
        freed = stats.get(f"{key}.all.freed", 0)
        lines.append(f"| {label:<22}| {_fmt_bytes(cur):>10} | {_fmt_bytes(peak):>10} | "
                     f"{_fmt_bytes(alloc):>10} | {_fmt_bytes(freed):>10} |")
    lines.append("|" + "-" * width + "|")
    for label, key in counts:
        cur = stats.get(f"{key}.all.current", 0)
        peak = stats.get(f"{key}.all.peak", 0)
        alloc = stats.get(f"{key}.all.allocated", 0)
        freed = stats.get(f"{key}.all.freed", 0)
        lines.append(f"| {label:<22}| {cur:>10} | {peak:>10} | {alloc:>10} | {freed:>10} |")
    lines.append("|" + "=" * width + "|")
    return "\n".join(lines) + "\n"


_history = {"enabled": None, "max_entries": 0}


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=1_000_000,
                           device=None):
    """Starts (``enabled="all"``/``"state"``/True) or stops (``None``/False) recording the
    allocator's alloc/free events for ``_snapshot`` / ``_dump_snapshot``."""
    if enabled is True:
        enabled = "all"
    if enabled is False:
        enabled = None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"_record_memory_history: enabled must be None, 'state' or 'all', got {enabled!r}")
    _history["enabled"] = enabled
    _history["max_entries"] = int(max_entries)
    if _ready():
        _b().record_memory_history(enabled is not None, enabled == "all", int(max_entries))


def _snapshot(device=None) -> dict:
    """The allocator state: ``segments`` (cached device memory) and ``device_traces``."""
    if not _ready():
        return {"segments": [], "device_traces": [], "allocator_settings": {}}
    return _b().memory_snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle") -> None:
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
