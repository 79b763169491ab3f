"""ember vs PyTorch autograd overhead, side by side.

    python3 benchmarks/bench_autograd.py [--threads N] [--cases SUBSTRING ...]

Cases: a grad-recording small op, a tiny forward+backward, a 100-op chain
forward+backward, and an MLP training step's forward+backward (raw tensors:
matmul + relu + sum). Both libraries get the same thread count (the small-op
cases run on one thread), are warmed up and timed as the median of several
samples (_cases.timeit). PyTorch runs in a subprocess under /usr/bin/python3
(Debian's python3-torch): this same file with --worker. Columns: median time
per call and ember's time over PyTorch's (below 1: ember is faster).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
from _common import (  # noqa: E402
    PYPI_TORCH_PYTHON,
    TORCH_PYTHON,
    base_parser,
    fmt_time,
    pin_threads,
    print_table,
    run_torch_worker,
)


def parse_args():
    p = base_parser(__doc__.split("\n\n")[0], "threads for both libraries (default: all cores)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    return p.parse_args()


args = parse_args()
pin_threads(args.threads)

import numpy as np  # noqa: E402
from _cases import timeit  # noqa: E402


def _leaf(conv, a):
    return conv(np.ascontiguousarray(a)).requires_grad_()


def _add_small(lib, conv):
    rng = np.random.default_rng(0)
    a, b = (_leaf(conv, rng.standard_normal(1, dtype=np.float32)) for _ in range(2))
    return lambda: a + b


def _add_sum_backward(lib, conv):
    rng = np.random.default_rng(0)
    x, y = (_leaf(conv, rng.standard_normal(4, dtype=np.float32)) for _ in range(2))

    def step():
        x.grad = None
        y.grad = None
        (x + y).sum().backward()
    return step


def _chain(lib, conv):
    x = _leaf(conv, np.random.default_rng(0).standard_normal(16, dtype=np.float32))

    def step():
        x.grad = None
        y = x
        for i in range(50):  # 100 recorded ops
            y = (y * 0.999).sin() if i % 2 else (y + 0.001).sin()
        y.sum().backward()
    return step


def _mlp(lib, conv):
    rng = np.random.default_rng(0)
    x = conv(rng.standard_normal((64, 784), dtype=np.float32))
    w1 = _leaf(conv, rng.standard_normal((784, 256), dtype=np.float32) * 0.05)
    b1 = _leaf(conv, np.zeros(256, dtype=np.float32))
    w2 = _leaf(conv, rng.standard_normal((256, 10), dtype=np.float32) * 0.05)
    b2 = _leaf(conv, np.zeros(10, dtype=np.float32))
    params = (w1, b1, w2, b2)

    def step():
        for p in params:
            p.grad = None
        h = (x @ w1 + b1).relu()
        (h @ w2 + b2).sum().backward()
    return step


# name -> (threads: "one" or "all", make(lib, convert) -> callable)
CASES = {
    "a + b, requires_grad, 1 elem (1 thread)": ("one", _add_small),
    "(x + y).sum().backward(), 4 elem (1 thread)": ("one", _add_sum_backward),
    "100-op chain fwd+bwd, 16 elem (1 thread)": ("one", _chain),
    "MLP 64x784-256-10 fwd+bwd (matmul+relu+sum)": ("all", _mlp),
}


def run_cases(lib, names, set_threads):
    out = {}
    for name in names:
        kind, make = CASES[name]
        set_threads(1 if kind == "one" else args.threads)
        fn = make(lib, lib.from_numpy)
        out[name] = timeit(fn)
        del fn
    return out


def worker():
    import torch
    config = torch.__config__.show()
    blas = next((w.rstrip(",") for w in config.split() if w.startswith("BLAS_INFO=")), "")
    res = {"version": torch.__version__, "blas": blas.partition("=")[2],
           "times": run_cases(torch, args.names, torch.set_num_threads)}
    print(json.dumps(res))


def run_torch(names, python):
    return run_torch_worker([os.path.abspath(__file__), "--worker", "--threads", str(args.threads),
                             *names], skip=args.no_torch, python=python)


def main():
    import _common

    import ember
    print(_common.ember_build(ember))  # which ember this run times
    names = [n for n in CASES if args.cases is None or any(c in n for c in args.cases)]
    print(f"threads: {args.threads} (cores: {os.cpu_count()}); ember {ember.__version__}",
          file=sys.stderr)
    local = run_cases(ember, names, ember.set_num_threads)
    pypi_version, pypi_times = run_torch(names, PYPI_TORCH_PYTHON)
    torch_version, torch_times = run_torch(names, TORCH_PYTHON)  # Debian's, the weaker column
    pypi_label = f"PyTorch {pypi_version}" if pypi_version else "PyTorch PyPI (not run)"
    torch_label = f"Debian PyTorch {torch_version}" if torch_version else "Debian PyTorch (not run)"
    header = ["case", "ember", pypi_label, torch_label, "ember/torch", "ember/debian"]
    rows = []
    for n in names:
        te, tp, tt = local[n], pypi_times.get(n), torch_times.get(n)
        r = [f"{te / x:.2f}x" if te is not None and x is not None else "n/a" for x in (tp, tt)]
        rows.append([n, fmt_time(te), fmt_time(tp), fmt_time(tt), *r])
    print_table(f"ember {ember.__version__} | {pypi_label} | {torch_label} | {args.threads} threads "
                f"(small-op cases: 1) | medians after warm-up", header, rows)
    if torch_version and "generic" in torch_version:
        print("note: this PyTorch build calls a reference (unoptimized) BLAS for matmul, so the "
              "MLP row mostly compares GEMM libraries, not autograd overhead.")


if __name__ == "__main__":
    if args.worker:
        worker()
    else:
        main()
