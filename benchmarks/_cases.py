"""The benchmark cases and the timer, shared by bench_core.py (ember, NumPy) and
_torch_worker.py (PyTorch, run under another interpreter). Plain Python + NumPy
so that both interpreters can import it."""
import time

import numpy as np

M16 = 16 * 1024 * 1024

# name -> (threads: "one" or "all", flops or None, make(lib_name, convert) -> callable)
# `convert` turns a NumPy array into the library's array type (zero-copy where possible).


def _binary(n):
    def make(lib, conv):
        rng = np.random.default_rng(0)
        a, b = (conv(rng.standard_normal(n, dtype=np.float32)) for _ in range(2))
        return lambda: a + b
    return make


def _add_out(lib, conv):
    rng = np.random.default_rng(0)
    a, b, c = (conv(rng.standard_normal(M16, dtype=np.float32)) for _ in range(3))
    add = lib.add
    return lambda: add(a, b, out=c)


def _sum(lib, conv):
    a = conv(np.random.default_rng(0).standard_normal(M16, dtype=np.float32))
    return lambda: a.sum()


def _mm(n):
    def make(lib, conv):
        rng = np.random.default_rng(0)
        a, b = (conv(rng.standard_normal((n, n), dtype=np.float32)) for _ in range(2))
        return lambda: a @ b
    return make


def _gather(lib, conv):
    rng = np.random.default_rng(0)
    x = conv(rng.standard_normal(M16, dtype=np.float32))
    idx = conv(rng.integers(0, M16, size=1 << 20, dtype=np.int64))
    return lambda: x[idx]


def _mask(lib, conv):
    rng = np.random.default_rng(0)
    x = conv(rng.standard_normal(M16, dtype=np.float32))
    mask = conv(rng.random(M16) < 0.5)
    return lambda: x[mask]


CASES = {
    "a + b, 1 elem (1 thread)": ("one", None, _binary(1)),
    "a + b, 100 elem (1 thread)": ("one", None, _binary(100)),
    "add(a, b, out=c), 16M f32": ("all", None, _add_out),
    "a + b (allocating), 16M f32": ("all", None, _binary(M16)),
    "a.sum(), 16M f32": ("all", None, _sum),
    "sgemm 1024": ("all", 2 * 1024**3, _mm(1024)),
    "sgemm 2048": ("all", 2 * 2048**3, _mm(2048)),
    "sgemm 4096": ("all", 2 * 4096**3, _mm(4096)),
    "x[idx], 1M int64 idx into 16M": ("all", None, _gather),
    "x[mask], 16M bool mask (50%)": ("all", None, _mask),
}


def timeit(fn, repeats=7, min_sample=0.02, max_total=4.0, clock=time.perf_counter):
    """Median seconds per call of `fn` over `repeats` samples, after warm-up.

    Each sample loops `fn` enough times to last at least `min_sample` seconds,
    so microsecond-scale calls are measured over many iterations. A call slower
    than a second (e.g. SGEMM on a reference BLAS) is timed once after one
    warm-up call, so that a slow library cannot stall the whole run. `clock` may be
    time.process_time: the process's CPU time, which other users of a shared machine do not
    inflate (meaningful with one thread)."""
    t0 = clock()
    fn()
    first = clock() - t0
    if first > 1.0:
        t0 = clock()
        fn()
        return clock() - t0
    for _ in range(2):
        fn()
    t0 = clock()
    fn()
    once = max(clock() - t0, 1e-9)
    inner = max(1, int(min_sample / once))
    repeats = max(3, min(repeats, int(max_total / (once * inner)) or 3))
    samples = []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(inner):
            fn()
        samples.append((clock() - t0) / inner)
    samples.sort()
    return samples[len(samples) // 2]
