"""ember vs PyTorch optimizer steps, side by side.

    python3 benchmarks/bench_optim.py [--threads N] [--cases SUBSTRING ...]

Each case is one optimizer.step() over 1M float32 parameters split into 100 tensors of
10,000 elements (gradients set once, state already initialized by the warm-up). ember's
step is one fused C++ call per group; PyTorch runs three ways: its default on the CPU
(the single-tensor for-loop), foreach=True (multi-tensor ops) and fused=True (its fused
CPU kernel). Both libraries get the same thread count, are warmed up and timed as the
median of several samples (_cases.timeit). PyTorch runs in a subprocess under
/work/torchvenv/bin/python (else Debian's /usr/bin/python3): this file with --worker.
Ratios are ember's time over PyTorch's (below 1: ember is faster).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common  # noqa: E402
from _common import base_parser, fmt_time, pin_threads, print_table, run_torch_worker  # noqa: E402

VENV_TORCH = "/work/torchvenv/bin/python"
if os.path.exists(VENV_TORCH):
    _common.TORCH_PYTHON = VENV_TORCH


def parse_args():
    p = base_parser(__doc__.split("\n\n")[0], "threads for both libraries (default: all cores)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    return p.parse_args()


args = parse_args()
pin_threads(args.threads)

import numpy as np  # noqa: E402
from _cases import timeit  # noqa: E402

N_TENSORS, NUMEL = 100, 10_000

# name -> (optimizer class name, kwargs)
CASES = {
    "Adam, 1M params in 100 tensors": ("Adam", {"lr": 1e-3}),
    "AdamW amsgrad, 1M params in 100 tensors": ("AdamW", {"lr": 1e-3, "amsgrad": True}),
    "SGD momentum+nesterov, 1M params in 100 tensors":
        ("SGD", {"lr": 1e-2, "momentum": 0.9, "nesterov": True}),
}
TORCH_VARIANTS = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def make_step(lib, cls_name, kwargs):
    rng = np.random.default_rng(0)
    params = []
    for _ in range(N_TENSORS):
        p = lib.from_numpy(rng.standard_normal(NUMEL, dtype=np.float32)).requires_grad_()
        p.grad = lib.from_numpy(rng.standard_normal(NUMEL, dtype=np.float32))
        params.append(p)
    opt = getattr(lib.optim, cls_name)(params, **kwargs)
    return opt.step


def worker():
    import torch
    torch.set_num_threads(args.threads)
    times = {}
    for name in args.names:
        cls_name, kwargs = CASES[name]
        for variant, extra in TORCH_VARIANTS.items():
            try:
                times[f"{name}|{variant}"] = timeit(make_step(torch, cls_name, {**kwargs, **extra}))
            except (RuntimeError, TypeError, ValueError):
                times[f"{name}|{variant}"] = None
    print(json.dumps({"version": torch.__version__, "times": times}))


def main():
    import ember
    print(_common.ember_build(ember))  # which ember this run times
    import ember.optim  # noqa: F401
    ember.set_num_threads(args.threads)
    names = [n for n in CASES if args.cases is None or any(c in n for c in args.cases)]
    print(f"threads: {args.threads} (cores: {os.cpu_count()}); ember {ember.__version__}",
          file=sys.stderr)
    local = {n: timeit(make_step(ember, *CASES[n])) for n in names}
    version, torch_times = run_torch_worker(
        [os.path.abspath(__file__), "--worker", "--threads", str(args.threads), *names],
        skip=args.no_torch)
    label = f"PyTorch {version}" if version else "PyTorch (not run)"

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b is not None else "n/a"

    header = ["case", "ember", "torch default", "torch foreach", "torch fused",
              "ember/default", "ember/foreach", "ember/fused"]
    rows = []
    for n in names:
        t = [torch_times.get(f"{n}|{v}") for v in TORCH_VARIANTS]
        rows.append([n, fmt_time(local[n]), *map(fmt_time, t), *(ratio(local[n], x) for x in t)])
    print_table(f"ember {ember.__version__} | {label} | {args.threads} threads | "
                "medians after warm-up", header, rows)


if __name__ == "__main__":
    if args.worker:
        worker()
    else:
        main()
