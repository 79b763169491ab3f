"""einsum and LAPACK-backed linalg: ember vs PyTorch, side by side.

    PYTHONPATH=python python3 benchmarks/bench_surface.py [--threads N] [--cases svd]

Each case is timed with warm-up and the median of repeats; PyTorch runs in a
subprocess of /work/torchvenv/bin/python (or TORCH_PYTHON) with the same thread
count. The ratio column is ember time / PyTorch time (below 1: ember faster).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

_common.TORCH_PYTHON = os.environ.get("TORCH_PYTHON", "/work/torchvenv/bin/python")


def cases(lib):
    """name -> (setup() -> args, fn(*args)), written once for both libraries."""
    import numpy as np
    rng = np.random.default_rng(0)

    def t(*shape, spd=False):
        a = rng.standard_normal(shape).astype(np.float32)
        if spd:
            a = a + np.eye(shape[-1], dtype=np.float32) * shape[-1]
        return lib.from_numpy(a)

    L = lib.linalg
    out = {
        "einsum bij,bjk->bik 32x64x64": (lambda: (t(32, 64, 64), t(32, 64, 64)),
                                         lambda a, b: lib.einsum("bij,bjk->bik", a, b)),
        "einsum bij,bjk->bik 8x256x256": (lambda: (t(8, 256, 256), t(8, 256, 256)),
                                          lambda a, b: lib.einsum("bij,bjk->bik", a, b)),
        "einsum ij->ji + sum 1024x1024": (lambda: (t(1024, 1024),),
                                          lambda a: lib.einsum("ij->ji", a).sum()),
        "einsum ij->j 1024x1024": (lambda: (t(1024, 1024),), lambda a: lib.einsum("ij->j", a)),
        "einsum bhqd,bhkd->bhqk 4x8x128x64": (lambda: (t(4, 8, 128, 64), t(4, 8, 128, 64)),
                                              lambda a, b: lib.einsum("bhqd,bhkd->bhqk", a, b)),
    }
    out["cdist 1024x64 vs 1024x64 (p=2)"] = (lambda: (t(1024, 64), t(1024, 64)),
                                             lambda a, b: lib.cdist(a, b))
    out["cdist batch 8x256x32 vs 8x256x32 (p=1)"] = (lambda: (t(8, 256, 32), t(8, 256, 32)),
                                                     lambda a, b: lib.cdist(a, b, p=1.0))
    for n in (32, 128, 512):
        out[f"linalg.svd {n}x{n}"] = (lambda n=n: (t(n, n),), lambda a: L.svd(a, full_matrices=False))
        out[f"linalg.solve {n}x{n}, 16 rhs"] = (lambda n=n: (t(n, n, spd=True), t(n, 16)),
                                                lambda a, b: L.solve(a, b))
    out["linalg.svd batch 64x16x16"] = (lambda: (t(64, 16, 16),), lambda a: L.svd(a, full_matrices=False))
    out["linalg.solve batch 64x16x16"] = (lambda: (t(64, 16, 16, spd=True), t(64, 16, 4)),
                                          lambda a, b: L.solve(a, b))
    return out


def time_all(lib, only):
    times = {}
    for name, (setup, fn) in cases(lib).items():
        if only and not any(o in name for o in only):
            continue
        args = setup()
        for _ in range(3):
            fn(*args)
        reps = []
        deadline = time.perf_counter() + 1.0
        while len(reps) < 5 or (time.perf_counter() < deadline and len(reps) < 50):
            t0 = time.perf_counter()
            fn(*args)
            reps.append(time.perf_counter() - t0)
        reps.sort()
        times[name] = reps[len(reps) // 2]
    return times


def worker(threads, only):
    _common.pin_threads(threads)
    import torch
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    times = time_all(torch, only)
    print(json.dumps({"version": f"PyTorch {torch.__version__}", "times": times}))


def main():
    p = _common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse_suppress())
    args = p.parse_args()
    if args.worker:
        return worker(args.threads, args.cases)
    _common.pin_threads(args.threads)
    import ember
    ember.set_num_threads(args.threads)
    print(_common.ember_build(ember))  # which ember this run times
    with ember.no_grad():
        mine = time_all(ember, args.cases)
    cmd = [os.path.abspath(__file__), "--worker", "--threads", str(args.threads)]
    if args.cases:
        cmd += ["--cases", *args.cases]
    version, theirs = _common.run_torch_worker(cmd, skip=args.no_torch)
    rows = []
    for name, t in mine.items():
        tt = theirs.get(name)
        rows.append([name, _common.fmt_time(t), _common.fmt_time(tt), f"{t / tt:.2f}" if tt else "n/a"])
    _common.print_table(f"ember vs {version or 'no PyTorch'}, {args.threads} thread(s)",
                        ["case", "ember", "PyTorch", "ratio"], rows)


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
