"""Process-wide numerics settings: the float32 matmul precision and deterministic
algorithms (as torch.set_float32_matmul_precision / torch.use_deterministic_algorithms).
The switches live in C++ (core/flags.h), where the kernels read them."""
from . import _C

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """"highest" (the default): float32 matrix products in IEEE float32. "high" and
    "medium": CUDA float32 products may use TF32 tensor cores (the same switch as
    ``ember.backends.cuda.matmul.allow_tf32``). The CPU always computes in float32."""
    if not isinstance(precision, str) or precision not in _PRECISIONS:
        raise RuntimeError(f"set_float32_matmul_precision: invalid precision {precision!r}; "
                           f"expected one of {', '.join(map(repr, _PRECISIONS))}")
    _C._set_float32_matmul_precision(_PRECISIONS.index(precision))


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision: "highest", "high" or "medium"."""
    return _PRECISIONS[_C._get_float32_matmul_precision()]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """With mode True, ops that have a deterministic alternative use it (on CUDA:
    index_put_ / index_add_ / scatter_add_ accumulate in a fixed order instead of with
    atomics, and cuDNN picks deterministic algorithms)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, got {type(mode).__name__}")
    _C._set_backend_flag("deterministic_algorithms", mode)
    _C._set_backend_flag("deterministic_warn_only", bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _C._get_backend_flag("deterministic_algorithms")


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _C._get_backend_flag("deterministic_warn_only")
