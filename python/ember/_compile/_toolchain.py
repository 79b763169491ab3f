"""The system C++ compiler and the on-disk cache of generated kernels (Note [Kernel cache]).

Note [Kernel cache]
A generated source is compiled once per machine into
``$EMBER_CACHE_DIR`` or ``~/.cache/ember/compile`` (``$XDG_CACHE_HOME/ember/compile``
when set), as ``k_<hash>.so`` where the hash covers the source, the headers it includes
(ember's scalar functors), the compiler's identity (``c++ --version``) and the flags. A
second process, or a later run, finds the library and only ``dlopen``s it. The library
is written to a temporary name and renamed, so concurrent processes never load a half
written file. No compiler on PATH (or ``EMBER_COMPILE_CC=""``): ``compiler()`` is None
and fusion groups run in the interpreter (``_runtime.py``).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

from .. import _C

FLAGS = ["-O3", "-march=native", "-shared", "-fPIC", "-std=c++17", "-fno-math-errno",
         "-fopenmp-simd", "-w"]

_lock = threading.Lock()
_loaded = {}  # key -> handle
_compiler = None
_compiler_id = None
_header_hash = None


def include_dir():
    """Where ember/kernels/functors.h is: ember/include in a wheel, csrc/ in a checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for d in (os.path.join(here, "include"), os.path.join(here, "..", "..", "csrc")):
        if os.path.exists(os.path.join(d, "ember", "kernels", "functors.h")):
            return os.path.normpath(d)
    return None


def cache_dir():
    d = os.environ.get("EMBER_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ember")
    return os.path.join(d, "compile")


def compiler():
    """The C++ compiler to use, or None (then groups are interpreted)."""
    global _compiler, _compiler_id
    cc = os.environ.get("EMBER_COMPILE_CC", os.environ.get("CXX", "c++"))
    if _compiler is not None and _compiler[0] == cc:
        return _compiler[1]
    path = shutil.which(cc) if cc else None
    if path is not None and include_dir() is None:
        path = None
    ident = None
    if path:
        try:
            ident = subprocess.run([path, "--version"], capture_output=True, text=True,
                                   timeout=30).stdout.splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            path = None
    _compiler = (cc, path)
    _compiler_id = ident
    return path


_MVEC_UNARY = ("cos", "sin", "tan", "acos", "asin", "atan", "cosh", "sinh", "tanh", "acosh",
               "asinh", "atanh", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10",
               "log1p", "erf", "erfc", "cbrt")
_MVEC_BINARY = ("pow", "atan2", "hypot")


def vector_math():
    """Declarations that let GCC vectorize the flat loop's libm calls through glibc's
    libmvec (its simd variants, as -ffast-math would declare them, without -ffast-math's
    other effects: NaN and signed-zero semantics stay exact; libmvec's results are within
    4 ulp). Empty where the compiler is not GCC or glibc is older than 2.35 (tanh)."""
    compiler()
    if not _compiler_id or "clang" in _compiler_id.lower() or not any(
            s in _compiler_id for s in ("g++", "GCC", "c++")):
        return ""
    try:
        ver = os.confstr("CS_GNU_LIBC_VERSION") or ""
        major, minor = (int(x) for x in ver.split()[-1].split(".")[:2])
    except (ValueError, OSError, IndexError):
        return ""
    import ctypes.util
    if (major, minor) < (2, 35) or not ctypes.util.find_library("mvec"):
        return ""
    d = ['extern "C" {']
    for f in _MVEC_UNARY:
        d.append(f'__attribute__((__simd__("notinbranch"))) float {f}f(float) noexcept;')
        d.append(f'__attribute__((__simd__("notinbranch"))) double {f}(double) noexcept;')
    for f in _MVEC_BINARY:
        d.append(f'__attribute__((__simd__("notinbranch"))) float {f}f(float, float) noexcept;')
        d.append(f'__attribute__((__simd__("notinbranch"))) double {f}(double, double) noexcept;')
    d.append("}")
    return "\n".join(d) + "\n"


def _headers_hash():
    global _header_hash
    if _header_hash is None:
        h = hashlib.sha256()
        inc = include_dir()
        for rel in ("ember/kernels/functors.h", "ember/kernels/philox.h", "ember/core/half.h"):
            with open(os.path.join(inc, rel), "rb") as f:
                h.update(f.read())
        _header_hash = h.hexdigest()
    return _header_hash


def source_key(source):
    cc = compiler()
    h = hashlib.sha256()
    for part in (source, _headers_hash(), cc or "", _compiler_id or "", " ".join(FLAGS)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def load(source, log=None):
    """Compiles (or finds in the cache) and loads `source`; returns (handle, path, cached)."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("ember.compile: no C++ compiler")
    key = source_key(source)
    with _lock:
        if key in _loaded:
            return _loaded[key], None, True
        d = cache_dir()
        os.makedirs(d, exist_ok=True)
        so = os.path.join(d, f"k_{key}.so")
        cached = os.path.exists(so)
        if not cached:
            src = os.path.join(d, f"k_{key}.cpp")
            with open(src + ".tmp", "w") as f:
                f.write(source)
            os.replace(src + ".tmp", src)
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=d)
            os.close(fd)
            libs = ["-lmvec"] if "__simd__" in source else []
            cmd = [cc, *FLAGS, "-I", include_dir(), src, "-o", tmp, *libs]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                os.unlink(tmp)
                raise RuntimeError(f"ember.compile: compiling a fused kernel failed "
                                   f"({' '.join(cmd)}):\n{r.stderr[-4000:]}")
            os.replace(tmp, so)
            if log:
                log(f"compiled {src}")
        h = _C._compile_load(so)
        _loaded[key] = h
        return h, so, cached
