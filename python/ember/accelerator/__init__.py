"""ember.accelerator: the device-neutral accelerator API (torch.accelerator).

The accelerator is the one ember was built with: CUDA when the ``_C_cuda`` backend is
present, else none. As in PyTorch, ``current_accelerator()`` answers from the build (a CUDA
build on a machine without a GPU still names ``cuda``; pass ``check_available=True`` to also
ask for a usable device), ``is_available()`` and ``device_count()`` answer at run time and
never raise, and the index/stream/synchronize/memory calls raise RuntimeError when there is no
accelerator ("Cannot access accelerator device when none is available.")."""
import warnings

from .. import cuda as _cuda
from .memory import (  # noqa: F401
    empty_cache,
    empty_host_cache,
    get_memory_info,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache",
           "get_device_capability", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream",
           "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _built():
    """The accelerator's device type compiled in ("cuda"), or None."""
    return "cuda" if _cuda._lazy() is not None else None


def _module():
    """The device module (ember.cuda) of the accelerator; RuntimeError when there is none."""
    if _built() is None:
        raise RuntimeError(_NONE)
    return _cuda


def _index(device, optional):
    """A device index from an int, "cuda:N", an ember.device or None (the current one), as
    torch.accelerator's ``_get_device_index``."""
    import ember

    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = ember.device(device)
    index = None
    if isinstance(device, ember.device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a ember.device with a specified index or an integer, "
                             f"but got:{device}")
        return current_device_index()
    return index


def device_count() -> int:
    """The number of accelerator devices visible; 0 when there is no accelerator."""
    return _cuda.device_count() if _built() is not None else 0


def is_available() -> bool:
    """True when ember was built with an accelerator, its driver is present and at least one
    device is visible."""
    return _built() is not None and _cuda.is_available()


def current_accelerator(check_available=False):
    """The accelerator's ``ember.device`` (index None) as built, or None; with
    ``check_available=True``, None also when no device is usable at run time."""
    import ember

    acc = _built()
    if acc is None or (check_available and not is_available()):
        return None
    return ember.device(acc)


def current_device_index() -> int:
    """The index of the current accelerator device."""
    return _module().current_device()


def current_device_idx() -> int:
    """Deprecated: ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def get_device_capability(device=None, /) -> dict:
    """{"supported_dtypes": the dtypes tensors on ``device`` can have}."""
    import ember

    _module().get_device_properties(_index(device, optional=True))
    return {"supported_dtypes": {ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32,
                                 ember.int64, ember.float16, ember.bfloat16, ember.float32,
                                 ember.float64}}


def set_device_index(device, /) -> None:
    """Makes ``device`` (an index, "cuda:N" or an ember.device) the current device; a
    negative index is a no-op."""
    idx = _index(device, optional=False)
    if idx >= 0:
        _module().set_device(idx)


def set_device_idx(device, /) -> None:
    """Deprecated: ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def current_stream(device=None, /):
    """The current stream of ``device`` (default: the current device)."""
    return _module().current_stream(_index(device, optional=True))


def set_stream(stream) -> None:
    """Makes ``stream`` current on its device (and that device current)."""
    mod = _module()
    mod.set_device(stream.device_index)
    mod.set_stream(stream)


def synchronize(device=None, /) -> None:
    """Waits for all work queued on ``device`` (default: the current device)."""
    _module().synchronize(_index(device, optional=True))


def get_device_module(device=None):
    """The module of a device type (``ember.cuda`` for "cuda", ``ember.cpu`` for "cpu"); with
    no argument, the accelerator's (``ember.cpu`` when there is none), as
    ``torch.get_device_module``."""
    import ember

    if isinstance(device, ember.device):
        name = device.type
    elif isinstance(device, str):
        name = ember.device(device).type
    elif device is None:
        acc = current_accelerator()
        name = acc.type if acc is not None else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or "
                           f"None")
    mod = getattr(ember, name, None)
    if mod is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as 'ember.{name}'.")
    return mod


class device_index:
    """``with ember.accelerator.device_index(i):`` makes device ``i`` current inside the
    block and restores the previous one after it; ``None`` is a no-op."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            mod = _module()
            self.prev_idx = mod.current_device()
            if self.prev_idx != self.idx:
                mod.set_device(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0 and self.prev_idx != self.idx:
            _module().set_device(self.prev_idx)
