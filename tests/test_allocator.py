"""The caching CPU allocator: huge-page advice for large blocks, alignment, thread caches."""
import os
import subprocess
import sys
import threading

import pytest

import ember

SMAPS = "/proc/self/smaps"
linux_only = pytest.mark.skipif(not os.path.exists(SMAPS), reason="needs Linux /proc/self/smaps")


def _vmflags_of(addr, smaps_text):
    """The VmFlags of the mapping that holds `addr`."""
    inside = False
    for line in smaps_text.splitlines():
        head = line.split()[0] if line else ""
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(v, 16) for v in head.split("-"))
            inside = lo <= addr < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {addr:#x}")


def _flags(t):
    with open(SMAPS) as f:
        return _vmflags_of(t.data_ptr(), f.read())


@linux_only
def test_large_block_is_advised_for_huge_pages():
    ember._C._cpu_empty_cache()
    t = ember.empty(3 << 20, dtype=ember.uint8)  # 3 MiB: spans whole 2-MiB pages
    assert "hg" in _flags(t)
    t.fill_(1)
    assert int(t.sum()) == 3 << 20


@linux_only
def test_small_block_is_not_advised():
    t = ember.empty(256, dtype=ember.float32)
    assert "hg" not in _flags(t)


@linux_only
def test_huge_pages_can_be_turned_off():
    code = (
        "import ember, tests.test_allocator as m\n"
        "t = ember.empty(3 << 20, dtype=ember.uint8)\n"
        "print('hg' in m._flags(t))\n"
    )
    env = dict(os.environ, EMBER_HUGE_PAGES="0")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=root)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("n", [1, 100, 1 << 16, 1 << 20, (5 << 20) + 3])
def test_blocks_are_64_byte_aligned_and_reused(n):
    a = ember.empty(n, dtype=ember.uint8)
    assert a.data_ptr() % 64 == 0
    p = a.data_ptr()
    del a
    b = ember.empty(n, dtype=ember.uint8)  # the cache hands the same block back
    assert b.data_ptr() == p


def test_tensors_outlive_the_thread_that_made_them():
    made = []

    def work():
        for i in range(200):
            made.append(ember.full((i % 7 + 1,), float(i)))
        tmp = [ember.ones(16) for _ in range(100)]  # freed into this thread's cache
        del tmp

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Blocks made by dead threads are freed here, into the main thread's cache.
    total = sum(float(t.sum()) for t in made)
    assert total == 4 * sum(float(i) * (i % 7 + 1) for i in range(200))
    made.clear()
    x = ember.ones(16)
    assert float(x.sum()) == 16.0


def test_peak_allocated_bytes():
    """peak_allocated_bytes: the most ever allocated since the last reset, which restarts it
    from what is allocated now (the benchmarks' peak memory of a step)."""
    stats = ember._C._cpu_allocator_stats
    keep = ember.empty(1 << 18)  # 1 MiB held across the reset
    ember._C._cpu_reset_peak_memory_stats()
    base = stats()["allocated_bytes"]
    assert stats()["peak_allocated_bytes"] == base
    a = ember.empty(1 << 20)  # 4 MiB
    b = ember.empty(1 << 19)  # 2 MiB
    del a, b
    ember.empty(1 << 18)  # 1 MiB, freed at once: below the peak
    peak = stats()["peak_allocated_bytes"] - base
    assert 6 << 20 <= peak < 7 << 20, peak
    assert stats()["allocated_bytes"] == base
    ember._C._cpu_reset_peak_memory_stats()
    assert stats()["peak_allocated_bytes"] == base
    del keep
