"""ember vs NumPy vs PyTorch on the core ops, side by side.

    python3 benchmarks/bench_core.py [--threads N] [--cases SUBSTRING ...]

Every library gets the same thread count (small-op dispatch cases run on one
thread), is warmed up, and is timed as the median of several samples (see
_cases.timeit). PyTorch runs in a subprocess under /usr/bin/python3 (Debian's
python3-torch), one case after another, never at the same time as ember.
Columns: median time per call (GFLOP/s for SGEMM) and the ratios of ember's time
to PyTorch's and NumPy's (below 1: ember is faster). An op ember does not have
yet shows as n/a.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
from _common import base_parser, fmt_time, pin_threads, print_table, run_torch_worker  # noqa: E402

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


def run_torch(names):
    """Times PyTorch in a subprocess; returns (version, {name: seconds})."""
    return run_torch_worker([os.path.join(HERE, "_torch_worker.py"), str(args.threads), *names],
                            skip=args.no_torch)


def main():
    names = [n for n in CASES if args.cases is None or any(c in n for c in args.cases)]
    print(f"threads: {args.threads} (cores: {os.cpu_count()}); ember {ember.__version__}, "
          f"numpy {np.__version__}", file=sys.stderr)
    local = run_local(names)
    torch_version, torch_times = run_torch(names)
    torch_label = f"PyTorch {torch_version}" if torch_version else "PyTorch (not run)"
    header = ["case", "ember", "NumPy", torch_label, "ember/torch", "ember/numpy"]
    rows = []
    for n in names:
        te, tn = local[n]
        tt = torch_times.get(n)
        flops = CASES[n][1]
        rows.append([n, fmt_cell(te, flops), fmt_cell(tn, flops), fmt_cell(tt, flops),
                     fmt_ratio(te, tt), fmt_ratio(te, tn)])
    print_table(f"ember {ember.__version__} | NumPy {np.__version__} | {torch_label} | "
                f"{args.threads} threads (dispatch cases: 1) | medians after warm-up", header, rows)
    if torch_version and "generic" in torch_version:
        print("note: this PyTorch build calls a reference (unoptimized) BLAS for matmul; compare "
              "SGEMM against NumPy's OpenBLAS instead.")


if __name__ == "__main__":
    main()
