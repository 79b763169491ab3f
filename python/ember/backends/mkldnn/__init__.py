"""oneDNN switches and queries, as ``torch.backends.mkldnn``.

float32 1-d and 2-d convolutions on the CPU use oneDNN (the library behind PyTorch's CPU
convolutions) where it measured faster than ember's own kernels, when ``libdnnl.so.2`` is
found at run time (``tools/install_deps.sh`` installs Debian's ``libdnnl-dev``; it is
loaded, never linked). ``is_available()`` says whether it was; ``enabled`` (default
True) switches it off for the process (so does ``EMBER_ONEDNN=0`` in the environment, read
at import). Without it the convolutions run ember's own kernels.
"""
import sys

from ... import _C
from .. import _flags

__all__ = ["is_available", "flags", "enabled"]

_NAMES = ("mkldnn_enabled",)


def is_available() -> bool:
    """Whether CPU convolutions can use oneDNN (built with its headers, library loaded)."""
    return bool(_C._has_mkldnn())


def flags(enabled=False):
    """A context manager setting ``enabled`` for its body, restoring it on exit."""
    return _flags.saved_flags(_NAMES, (enabled,))


class _MkldnnModule(_flags.FlagModule):
    enabled = _flags.flag_property("mkldnn_enabled", "enabled: CPU convolutions may use oneDNN")


_flags.install(__name__, sys.modules[__name__].__dict__, _MkldnnModule)
