"""ember vs NumPy vs PyTorch on the core ops, side by side.

    python3 benchmarks/bench_core.py [--threads N] [--cases SUBSTRING ...]

Every library gets the same thread count (small-op dispatch cases run on one
thread), is warmed up, and is timed as the median of several samples (see
_cases.timeit). PyTorch runs in subprocesses, one case after another, never at the
same time as ember: the reference is a current PyTorch from PyPI (MKL + oneDNN) in its
own venv (TORCH_PYTHON, default /work/torchvenv/bin/python); Debian's python3-torch 1.13
under /usr/bin/python3 (reference BLAS) is a second, weaker column.
Columns: median time per call (GFLOP/s for SGEMM) and the ratios of ember's time
to each PyTorch's and NumPy's (below 1: ember is faster). An op ember does not have
yet shows as n/a.
"""
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

args = base_parser(__doc__.split("\n\n")[0]).parse_args()
pin_threads(args.threads)

import numpy as np  # noqa: E402
from _cases import CASES, timeit  # noqa: E402

import ember  # noqa: E402


def fmt_cell(t, flops):
    if t is None:
        return "n/a"
    s = fmt_time(t)
    return f"{s} ({flops / t / 1e9:.0f} GF/s)" if flops else s


def fmt_ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b is not None else "n/a"


def run_local(names):
    """Times ember and NumPy; returns {name: (ember_s, numpy_s)}."""
    out = {}
    for name in names:
        kind, _, make = CASES[name]
        threads = 1 if kind == "one" else args.threads
        ember.set_num_threads(threads)
        try:
            fn = make(ember, ember.from_numpy)
            fn()  # an op ember does not have yet fails here
        except (AttributeError, TypeError, NotImplementedError, RuntimeError) as e:
            print(f"  ember: {name}: n/a ({type(e).__name__}: {str(e).splitlines()[0][:80]})",
                  file=sys.stderr)
            t_ember = None
        else:
            t_ember = timeit(fn)
        del fn
        t_numpy = timeit(make(np, lambda a: a))
        out[name] = (t_ember, t_numpy)
        print(f"  {name}: ember {fmt_time(t_ember)}, numpy {fmt_time(t_numpy)}", file=sys.stderr)
    return out


def run_torch(names, python):
    """Times PyTorch in a subprocess of `python`; returns (version, {name: seconds})."""
    return run_torch_worker([os.path.join(HERE, "_torch_worker.py"), str(args.threads), *names],
                            skip=args.no_torch, python=python)


def main():
    names = [n for n in CASES if args.cases is None or any(c in n for c in args.cases)]
    import _common
    print(_common.ember_build(ember))  # which ember this run times
    print(f"threads: {args.threads} (cores: {os.cpu_count()}); ember {ember.__version__}, "
          f"numpy {np.__version__}", file=sys.stderr)
    local = run_local(names)
    pypi_version, pypi_times = run_torch(names, PYPI_TORCH_PYTHON)
    deb_version, deb_times = run_torch(names, TORCH_PYTHON)
    pypi_label = f"PyTorch {pypi_version}" if pypi_version else "PyTorch PyPI (not run)"
    deb_label = f"Debian PyTorch {deb_version}" if deb_version else "Debian PyTorch (not run)"
    header = ["case", "ember", "NumPy", pypi_label, deb_label, "ember/torch", "ember/debian",
              "ember/numpy"]
    rows = []
    for n in names:
        te, tn = local[n]
        tp, td = pypi_times.get(n), deb_times.get(n)
        flops = CASES[n][1]
        rows.append([n, fmt_cell(te, flops), fmt_cell(tn, flops), fmt_cell(tp, flops),
                     fmt_cell(td, flops), fmt_ratio(te, tp), fmt_ratio(te, td), fmt_ratio(te, tn)])
    print_table(f"ember {ember.__version__} | NumPy {np.__version__} | {pypi_label} | {deb_label} | "
                f"{args.threads} threads (dispatch cases: 1) | medians after warm-up", header, rows)
    torch_version = deb_version
    if torch_version and "generic" in torch_version:
        print("note: this PyTorch build calls a reference (unoptimized) BLAS for matmul; compare "
              "SGEMM against NumPy's OpenBLAS instead.")


if __name__ == "__main__":
    main()
