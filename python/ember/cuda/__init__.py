"""ember.cuda: device queries. The CUDA backend (ember._C_cuda) is loaded lazily,
so importing ember never needs a GPU or a driver."""
_backend = None
_load_error = None


def _lazy():
    global _backend, _load_error
    if _backend is None and _load_error is None:
        try:
            from .. import _C_cuda
            _backend = _C_cuda
        except ImportError as e:  # CPU-only build, or no driver
            _load_error = e
    return _backend


def is_available() -> bool:
    """True when ember was built with CUDA and a GPU and driver are present."""
    b = _lazy()
    return bool(b is not None and b.device_count() > 0)


def device_count() -> int:
    b = _lazy()
    return b.device_count() if b is not None else 0
