"""SGEMM throughput: ember vs NumPy vs PyTorch, float32 square matrices.

    python3 benchmarks/bench_matmul.py [--threads N] [--sizes 1024 2048 4096] [--no-torch]

Each library gets the same thread count, is warmed up, and is timed as the
median of several `a @ b` calls (the result allocated each call, as user code
does). PyTorch runs in a subprocess under /usr/bin/python3 (Debian's
python3-torch; ember is built for another interpreter), after ember and NumPy
are done, so the libraries never compete for the cores. Prints GFLOP/s
(2*n^3 flops per product) and ember's throughput relative to the others.
This is a measurement, not a test: nothing is asserted.
"""
import argparse
import json
import os
import subprocess
import sys

TORCH_PYTHON = "/usr/bin/python3"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048, 4096])
    p.add_argument("--no-torch", action="store_true")
    return p.parse_args()


# Shared with the PyTorch subprocess (sent as source): times fn, median after warm-up.
TIMER = '''
import time
def median_seconds(fn, n):
    t0 = time.perf_counter(); fn(); first = time.perf_counter() - t0
    if first > 3.0:
        return first  # too slow to repeat (e.g. a reference BLAS): one sample
    fn()  # warm-up: page faults, BLAS buffers, thread start
    reps = 3 if n >= 4096 else 5 if n >= 2048 else 9
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]
'''

TORCH_SCRIPT = TIMER + '''
import json, sys, torch
threads = int(sys.argv[1]); sizes = [int(s) for s in sys.argv[2:]]
torch.set_num_threads(threads)
res = {"version": torch.__version__, "threads": torch.get_num_threads(), "seconds": {}}
for n in sizes:
    g = torch.Generator().manual_seed(0)
    a = torch.rand(n, n, generator=g); b = torch.rand(n, n, generator=g)
    res["seconds"][str(n)] = median_seconds(lambda: a @ b, n)
print(json.dumps(res))
'''


def torch_seconds(threads, sizes):
    if not os.path.exists(TORCH_PYTHON):
        return None, "no /usr/bin/python3"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    r = subprocess.run([TORCH_PYTHON, "-c", TORCH_SCRIPT, str(threads)] + [str(s) for s in sizes],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(r.stdout), None


def main():
    args = parse_args()
    # NumPy's BLAS reads these when it loads: set them before importing NumPy.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np

    import ember
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _common
    print(_common.ember_build(ember))  # which ember this run times

    ns = {}
    exec(TIMER, ns)
    median_seconds = ns["median_seconds"]
    ember.set_num_threads(args.threads)
    info = ember._C._blas_info()

    rows = {}
    for n in args.sizes:
        rng = np.random.default_rng(0)
        an = rng.random((n, n), dtype=np.float32)
        bn = rng.random((n, n), dtype=np.float32)
        ae, be = ember.from_numpy(an), ember.from_numpy(bn)
        rows[n] = {"ember": median_seconds(lambda: ae @ be, n),
                   "numpy": median_seconds(lambda: an @ bn, n)}

    torch_res, why = (None, "skipped") if args.no_torch else torch_seconds(args.threads, args.sizes)
    for n in args.sizes:
        rows[n]["torch"] = torch_res["seconds"][str(n)] if torch_res else None

    gf = lambda n, s: 2.0 * n ** 3 / s / 1e9 if s else None  # noqa: E731
    print(f"SGEMM float32, {args.threads} thread(s); ember: {info['library']} "
          f"({info['corename'] or '-'}, {info['threads']} BLAS threads); NumPy {np.__version__}; "
          + (f"PyTorch {torch_res['version']}" if torch_res else f"PyTorch: n/a ({why})"))
    print(f"{'n':>6} {'ember GF/s':>11} {'NumPy GF/s':>11} {'torch GF/s':>11} "
          f"{'ember/NumPy':>12} {'ember/torch':>12}")
    for n in args.sizes:
        e, p, t = (gf(n, rows[n][k]) for k in ("ember", "numpy", "torch"))
        fmt = lambda v: f"{v:11.1f}" if v else f"{'n/a':>11}"  # noqa: E731
        ratio = lambda x: f"{e / x:12.2f}" if x else f"{'n/a':>12}"  # noqa: E731
        print(f"{n:>6} {fmt(e)} {fmt(p)} {fmt(t)} {ratio(p)} {ratio(t)}")


if __name__ == "__main__":
    main()
