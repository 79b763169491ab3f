"""Finds the BLAS that ember's matmul calls (scipy-openblas32 from PyPI).

The library is loaded with RTLD_GLOBAL before ember._C so the core can look up
its symbols (``scipy_cblas_sgemm`` ...) without linking against a path that
only exists at install time.
"""
import ctypes
import os

LIBRARY = None
try:
    import scipy_openblas32 as _sob

    _path = os.path.join(_sob.get_lib_dir(), "libscipy_openblas.so")
    if os.path.exists(_path):
        LIBRARY = ctypes.CDLL(_path, mode=ctypes.RTLD_GLOBAL)
        PATH = _path
except ImportError:  # pragma: no cover - the package is a hard dependency
    PATH = None
