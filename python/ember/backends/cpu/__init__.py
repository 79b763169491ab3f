"""The CPU backend: which instruction set its hot kernels run with.

ember compiles its elementwise and reduction kernels once per CPU capability
(baseline x86-64, AVX2+FMA, AVX-512) and picks one when it is loaded, from what
the CPU supports. The environment variable ``EMBER_CPU_CAPABILITY``
(``default``, ``avx2`` or ``avx512``), read once at import, lowers the choice;
it never raises it above what the CPU supports.
"""
from ... import _C

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """The capability the CPU kernels run with: ``"default"``, ``"avx2"`` or ``"avx512"``
    (as ``torch.backends.cpu.get_cpu_capability``)."""
    return _C._get_cpu_capability()


def _get_supported_cpu_capability() -> str:
    """The best capability this CPU supports, whether or not it was compiled in."""
    return _C._get_supported_cpu_capability()


def _compiled_cpu_capabilities() -> list:
    """The capabilities the kernels were compiled for (all three with EMBER_CPU_DISPATCH=ON
    on x86-64; only "default" otherwise)."""
    return list(_C._compiled_cpu_capabilities())
