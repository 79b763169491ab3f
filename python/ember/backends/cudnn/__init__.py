"""cuDNN switches and queries, as ``torch.backends.cudnn``.

``enabled`` (default True) lets convolutions on CUDA use cuDNN; without it (or without a
loadable libcudnn) they run as im2col + cuBLAS GEMMs. ``benchmark`` (default False) times
the candidate algorithms for each new geometry instead of taking cuDNN's heuristic choice;
``deterministic`` (default False) restricts cuDNN to deterministic algorithms;
``allow_tf32`` (default True, as in PyTorch) lets float32 convolutions use TF32 tensor
cores. cuDNN is loaded at run time, never linked: ``is_available()`` says whether it was
found.
"""
import sys

from .. import _flags

__all__ = ["is_available", "version", "flags", "enabled", "benchmark", "deterministic",
           "allow_tf32"]

_NAMES = ("cudnn_enabled", "cudnn_benchmark", "cudnn_deterministic", "cudnn_allow_tf32")


def _cuda_module():
    from ... import cuda
    if not cuda.is_available():
        return None
    cuda._lazy_init()
    return cuda._backend


def version():
    """The version of the loaded cuDNN as an int (e.g. 90100), or None without one."""
    mod = _cuda_module()
    if mod is None or not hasattr(mod, "_cudnn_version"):
        return None
    v = mod._cudnn_version()
    return v if v > 0 else None


def is_available() -> bool:
    """Whether convolutions on CUDA can use cuDNN (a GPU and a loadable libcudnn)."""
    return version() is not None


def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """A context manager setting the four switches for its body (PyTorch's defaults for
    its arguments), restoring them on exit."""
    return _flags.saved_flags(_NAMES, (enabled, benchmark, deterministic, allow_tf32))


class _CudnnModule(_flags.FlagModule):
    enabled = _flags.flag_property("cudnn_enabled", "enabled: convolutions may use cuDNN")
    benchmark = _flags.flag_property(
        "cudnn_benchmark", "benchmark: time cuDNN's algorithms for each new geometry")
    deterministic = _flags.flag_property(
        "cudnn_deterministic", "deterministic: only deterministic cuDNN algorithms")
    allow_tf32 = _flags.flag_property(
        "cudnn_allow_tf32", "allow_tf32: float32 convolutions may use TF32 tensor cores")


_flags.install(__name__, sys.modules[__name__].__dict__, _CudnnModule)
