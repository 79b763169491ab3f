"""ember.cuda: device queries and the lazily loaded CUDA backend.

The backend (ember._C_cuda) is imported on first use, so ``import ember`` never
needs a GPU or a driver. A CUDA tensor op without a usable backend raises a
RuntimeError saying why (CPU-only build, or no GPU/driver).
"""
_backend = None
_load_error = None


def _lazy():
    global _backend, _load_error
    if _backend is None and _load_error is None:
        try:
            from .. import _C_cuda
            _backend = _C_cuda
        except ImportError as e:  # CPU-only build
            _load_error = e
    return _backend


def _lazy_init():
    """Makes the CUDA backend usable or raises RuntimeError explaining why not."""
    b = _lazy()
    if b is None:
        raise RuntimeError("ember was built without CUDA (no nvcc was found at build time, or "
                           "EMBER_CUDA=OFF); rebuild with the CUDA toolkit installed to use "
                           "device='cuda'")
    if b.device_count() == 0:
        raise RuntimeError("Found no NVIDIA driver on your system, or no CUDA device is visible: "
                           "ember.cuda.is_available() is False. Use device='cpu'.")


def is_available() -> bool:
    """True when ember was built with CUDA and a GPU and driver are present."""
    b = _lazy()
    return bool(b is not None and b.device_count() > 0)


def device_count() -> int:
    b = _lazy()
    return b.device_count() if b is not None else 0


def current_device() -> int:
    _lazy_init()
    return _backend.current_device()


def set_device(device) -> None:
    _lazy_init()
    idx = device if isinstance(device, int) else (device.index or 0)
    _backend.set_device(idx)


def get_device_name(device=None) -> str:
    _lazy_init()
    idx = 0 if device is None else (device if isinstance(device, int) else (device.index or 0))
    return _backend.get_device_name(idx)


def synchronize(device=None) -> None:
    _lazy_init()
    _backend.synchronize()


def empty_cache() -> None:
    if _lazy() is not None and is_available():
        _backend.empty_cache()


def memory_allocated(device=None) -> int:
    return _backend.memory_allocated() if is_available() else 0


def memory_reserved(device=None) -> int:
    return _backend.memory_reserved() if is_available() else 0


def manual_seed(seed: int) -> None:
    """Seeds the generator CUDA ops use (ember's CUDA ops draw from the default generator)."""
    from .. import _C
    _C.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)
