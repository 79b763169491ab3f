"""Whether this host can report a host allocation that is too large.

Where /proc/sys/vm/overcommit_memory is 1 ("always"), Linux grants any allocation that fits the
address space and kills the process when the pages are touched: an out-of-memory error cannot
be raised, by ember or by PyTorch. Tests of those errors skip there (seen on a lent GPU VM).
"""
import pytest


def overcommit_always():
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


needs_refused_allocations = pytest.mark.skipif(
    overcommit_always(), reason="vm.overcommit_memory is 1: the kernel grants every allocation "
    "and kills the process on touch, so no out-of-memory error can be raised")
