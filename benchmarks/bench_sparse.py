"""Sparse COO tensors, ember vs PyTorch: sparse x dense and coalesce (the issue's targets).

Cases:
  spmm: torch.sparse.mm(S, D), S 10k x 10k at 1% density (1M entries, coalesced), D 10k x 64
  spmm fwd+bwd: the same with D requiring grad, .sum().backward() (S^T @ grad in backward)
  coalesce: S.coalesce() of 1M unsorted entries (random indices in 10k x 10k, some repeated)
Both libraries build the same data from NumPy (seed 0). Each runs in its own subprocess
(this script with --worker), alternating ember and PyTorch for --rounds rounds; a library's
figure is the median over its rounds of each round's median of --repeat timed calls after a
warm-up; the spread is the range of those round medians. Threads are pinned per process
(--threads 1 2 runs both counts in one invocation). PyTorch: /work/torchvenv/bin/python.

    PYTHONPATH=python python3 benchmarks/bench_sparse.py --threads 1 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common  # noqa: E402

TORCH_PY = "/work/torchvenv/bin/python"
N, DENSITY, COLS, COALESCE_NNZ = 10_000, 0.01, 64, 1_000_000
CASES = ["spmm 1% 10k x 10k @ 10k x 64", "spmm fwd+bwd 1% 10k x 10k @ 10k x 64",
         "coalesce 1M unsorted (10k x 10k)"]


def make_case(lib, name):
    import numpy as np
    rng = np.random.default_rng(0)
    if name.startswith("coalesce"):
        idx = rng.integers(0, N, size=(2, COALESCE_NNZ))
        vals = rng.standard_normal(COALESCE_NNZ).astype(np.float32)
        s = lib.sparse_coo_tensor(lib.from_numpy(idx), lib.from_numpy(vals), (N, N))
        return lambda: s.coalesce()
    nnz = int(N * N * DENSITY)
    lin = rng.choice(N * N, size=nnz, replace=False)
    idx = np.stack(np.unravel_index(lin, (N, N))).astype(np.int64)
    vals = rng.standard_normal(nnz).astype(np.float32)
    s = lib.sparse_coo_tensor(lib.from_numpy(idx), lib.from_numpy(vals), (N, N)).coalesce()
    d = lib.from_numpy(rng.standard_normal((N, COLS)).astype(np.float32))
    if "bwd" in name:
        d.requires_grad_(True)

        def run():
            lib.sparse.mm(s, d).sum().backward()
            d.grad = None
        return run
    return lambda: lib.sparse.mm(s, d)


def worker(lib_name, threads, repeat, names):
    if lib_name == "torch":
        import torch as lib
        version = lib.__version__
    else:
        import ember as lib
        version = "ember"
    lib.set_num_threads(threads)
    times = {}
    for name in names:
        fn = make_case(lib, name)
        fn()
        fn()  # warm-up
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        times[name] = statistics.median(ts)
    return version, times


def run_worker(python, lib_name, threads, repeat, names):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    if lib_name == "torch":
        env["PYTHONPATH"] = ""
    cmd = [python, os.path.abspath(__file__), "--worker", lib_name, "--threads", str(threads),
           "--repeat", str(repeat), "--names", *names]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"{lib_name} worker failed:\n" + r.stderr[-2000:], file=sys.stderr)
        return None, {}
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["version"], res["times"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--names", nargs="*", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        version, times = worker(args.worker, args.threads[0], args.repeat, args.names)
        print(json.dumps({"version": version, "times": times}))
        return
    names = [n for n in CASES if not args.cases or any(c in n for c in args.cases)]
    torch_py = None if args.no_torch or not os.path.exists(TORCH_PY) else TORCH_PY
    for threads in args.threads:
        rounds = {"ember": {n: [] for n in names}, "torch": {n: [] for n in names}}
        tv = None
        for _ in range(max(1, args.rounds)):
            for lib_name, py in (("ember", sys.executable), ("torch", torch_py)):
                if py is None:
                    continue
                version, times = run_worker(py, lib_name, threads, args.repeat, names)
                if lib_name == "torch" and version:
                    tv = version
                for n, t in times.items():
                    rounds[lib_name][n].append(t)
        rows = []
        for n in names:
            e, t = rounds["ember"][n], rounds["torch"][n]
            em, tm = (statistics.median(e) if e else None), (statistics.median(t) if t else None)
            spread = lambda v: (f"{_common.fmt_time(min(v))}-{_common.fmt_time(max(v))}"  # noqa
                                if v else "n/a")
            rows.append([n, _common.fmt_time(em), spread(e), _common.fmt_time(tm), spread(t),
                         f"{em / tm:.2f}x" if em and tm else "n/a"])
        _common.print_table(
            f"\nthreads={threads}, torch={tv or 'n/a'}, {args.rounds} alternating rounds x "
            f"{args.repeat} calls (ratio: ember / torch, lower is better)",
            ["case", "ember", "ember spread", "torch", "torch spread", "ratio"], rows)


if __name__ == "__main__":
    main()
