"""The Python interpreter that has PyTorch, for the side-by-side tests that run a script under
PyTorch in a subprocess and compare with ember.

One place for all of them: they used to look in /work/torchvenv only (under two different
environment variables), and so skipped on the GPU machine, whose own python3 has torch (and
torchvision) and which has no /work/torchvenv. TORCH_PY is the first of $EMBER_TORCH_PYTHON,
$TORCH_PYTHON and /work/torchvenv/bin/python that exists; else this interpreter, when it can
import torch; else /usr/bin/python3, when it can; else None (the tests then skip). torch is
never imported in this process: find_spec only looks for it, and /usr/bin/python3 is asked in
a subprocess."""
import functools
import importlib.util
import os
import shutil
import subprocess
import sys


def _existing(path):
    if not path:
        return None
    found = shutil.which(path)
    return found if found else (path if os.path.exists(path) else None)


@functools.cache
def torch_python():
    """The path of a Python that can import torch, or None."""
    for p in (os.environ.get("EMBER_TORCH_PYTHON"), os.environ.get("TORCH_PYTHON"),
              "/work/torchvenv/bin/python"):
        found = _existing(p)
        if found:
            return found
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    system = "/usr/bin/python3"
    if os.path.exists(system) and os.path.realpath(system) != os.path.realpath(sys.executable):
        try:
            r = subprocess.run([system, "-c", "import importlib.util, sys; "
                                "sys.exit(importlib.util.find_spec('torch') is None)"],
                               capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode == 0:
            return system
    return None


TORCH_PY = torch_python()


_SANITIZER_VARS = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


def torch_env(**extra):
    """The environment for a PyTorch subprocess: this one's, without ember's PYTHONPATH and
    without the sanitizer pass's preloaded ASan runtime and options (tools/sanitize.sh), which
    are for ember's libraries: PyTorch under a preloaded ASan runs slowly enough (its DataLoader
    workers most of all) to time out."""
    env = {k: v for k, v in os.environ.items() if k not in _SANITIZER_VARS}
    env["PYTHONPATH"] = ""
    env.update(extra)
    return env
