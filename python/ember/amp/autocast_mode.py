"""ember.autocast / ember.amp.autocast: PyTorch's automatic mixed precision regions.

The cast policy itself is C++ (ops/autocast.cpp, Note [Autocast policy]): this
class only saves, sets and restores the thread-local autocast state.
"""
from __future__ import annotations

import functools
import warnings

from .. import _C

_DEVICE_TYPES = ("cpu", "cuda")


def _check_device_type(device_type, fn="autocast"):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'; "
                           f"ember's {fn} supports {_DEVICE_TYPES}")


def is_autocast_available(device_type: str) -> bool:
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: CUDA, PyTorch's legacy form)."""
    if device_type is None:
        device_type = "cuda"
    _check_device_type(device_type, "is_autocast_enabled")
    return _C._autocast_is_enabled(device_type)


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # legacy set_autocast_enabled(bool): CUDA
        device_type, enabled = "cuda", device_type
    _check_device_type(device_type, "set_autocast_enabled")
    _C._autocast_set_enabled(device_type, bool(enabled))


def get_autocast_dtype(device_type: str):
    _check_device_type(device_type, "get_autocast_dtype")
    return _C._autocast_get_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype) -> None:
    _check_device_type(device_type, "set_autocast_dtype")
    _C._autocast_set_dtype(device_type, dtype)


def is_autocast_cpu_enabled() -> bool:
    return _C._autocast_is_enabled("cpu")


def get_autocast_cpu_dtype():
    return _C._autocast_get_dtype("cpu")


def get_autocast_gpu_dtype():
    return _C._autocast_get_dtype("cuda")


def is_autocast_cache_enabled() -> bool:
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    _C._autocast_set_cache_enabled(bool(enabled))


def clear_autocast_cache() -> None:
    _C._autocast_clear_cache()


class autocast:
    """Runs the ops of a region in mixed precision (see torch.autocast).

    ``with ember.autocast("cpu"):`` runs matmul/linear/conv/sdpa in bfloat16 and
    softmax/losses/norms/exp/log/sum... in float32; ``"cuda"`` defaults to float16.
    Also usable as a decorator.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        enabled = bool(enabled)
        from .. import bfloat16, float16
        if self.fast_dtype not in (bfloat16, float16):
            if device_type == "cpu":
                warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                              "autocast.\nCPU Autocast only supports dtype of ember.bfloat16, "
                              "ember.float16 currently.", stacklevel=2)
            else:
                warnings.warn(f"In CUDA autocast, but the target dtype {self.fast_dtype} is not "
                              "supported. Disabling autocast.\nCUDA Autocast only supports dtypes "
                              "of ember.float16 and ember.bfloat16 currently.", stacklevel=2)
            enabled = False
        if device_type == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                              "Disabling", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = _C._autocast_is_enabled(self.device)
        self.prev_fastdtype = _C._autocast_get_dtype(self.device)
        _C._autocast_set_enabled(self.device, self._enabled)
        if self._enabled:
            _C._autocast_set_dtype(self.device, self.fast_dtype)
        _C._autocast_increment_nesting()
        _C._autocast_set_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # Casts cached for parameters live until the outermost region exits.
        if _C._autocast_decrement_nesting() == 0:
            _C._autocast_clear_cache()
        _C._autocast_set_enabled(self.device, self.prev)
        _C._autocast_set_dtype(self.device, self.prev_fastdtype)
        _C._autocast_set_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorate_autocast
