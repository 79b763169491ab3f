"""Finds the BLAS that ember's matmul calls (scipy-openblas32 from PyPI).

The library is loaded with RTLD_GLOBAL before ember._C so the core can look up
its symbols (``scipy_cblas_sgemm`` ...) without linking against a path that
only exists at install time.
"""
import ctypes
import os

LIBRARY = None
# OpenBLAS's worker threads spin for 2**28 cycles (tens of ms) after each call before they
# sleep. ember's own thread pool runs the ops between two matmuls, so on a machine with as many
# threads as cores the spinning workers take the cores those ops need (resnet18 forward at
# batch 1, 2 threads on 2 cores: 91-140 ms with the default, 75-79 ms with this; 67 ms at one
# thread). The library reads the setting when it is loaded (importing scipy_openblas32 loads
# it); a value the user set is kept, and the environment is restored afterwards.
_had_timeout = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
if _had_timeout is None:
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"  # 2**4 cycles: sleep at once
try:
    import scipy_openblas32 as _sob

    _path = os.path.join(_sob.get_lib_dir(), "libscipy_openblas.so")
    if os.path.exists(_path):
        LIBRARY = ctypes.CDLL(_path, mode=ctypes.RTLD_GLOBAL)
        PATH = _path
except ImportError:  # pragma: no cover - the package is a hard dependency
    PATH = None
finally:
    if _had_timeout is None:
        del os.environ["OPENBLAS_THREAD_TIMEOUT"]
