"""conv2d forward and forward+backward: ember vs PyTorch, float32, same thread count.

    python3 benchmarks/bench_conv.py [--threads N] [--cases NAME ...] [--no-torch]

Cases (the tutorial CNN's layers and a wider one):
  1->16 channels on 28x28, batch 64, 3x3, padding 1
  16->16 channels on 14x14, batch 64, 3x3, padding 1
  32->64 channels on 26x26, batch 64, 3x3, no padding
Each library is warmed up and timed as the median of several calls; PyTorch runs
in a subprocess (the PyPI build at /work/torchvenv/bin/python when present, else
Debian's /usr/bin/python3) after ember is done, so the two never share the cores.
Prints times and ember's time relative to PyTorch's (< 1.0 means ember is faster).
On a shared, loaded machine wall-clock medians swing several-fold; with --threads 1,
--clock process measures the process's CPU time instead (both libraries alike).
This is a measurement, not a test: nothing is asserted.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

VENV_TORCH = "/work/torchvenv/bin/python"

CASES = [  # name, (N, Cin, H, W), (Cout, Cin, kh, kw), padding
    ("64x1x28x28 -> 16 3x3", (64, 1, 28, 28), (16, 1, 3, 3), 1),
    ("64x16x14x14 -> 16 3x3", (64, 16, 14, 14), (16, 16, 3, 3), 1),
    ("64x32x26x26 -> 64 3x3", (64, 32, 26, 26), (64, 32, 3, 3), 0),
]

# Shared with the PyTorch worker (sent as source): the timing loop and the cases.
BODY = '''
import time
CLOCK = time.perf_counter
def median_seconds(fn, reps=15):
    fn(); fn()  # warm-up: allocator, BLAS buffers, thread start
    ts = []
    for _ in range(reps):
        t0 = CLOCK(); fn(); ts.append(CLOCK() - t0)
    ts.sort()
    return ts[len(ts) // 2]

def run_cases(lib, F, cases, make):
    times = {}
    for name, xs, ws, pad in cases:
        x = make(xs); w = make(ws); b = make((ws[0],))
        times[name + " fwd"] = median_seconds(lambda: F.conv2d(x, w, b, padding=pad))
        xg = make(xs).requires_grad_(); wg = make(ws).requires_grad_(); bg = make((ws[0],)).requires_grad_()
        def fb():
            y = F.conv2d(xg, wg, bg, padding=pad)
            y.sum().backward()
        times[name + " fwd+bwd"] = median_seconds(fb)
    return times
'''

TORCH_SCRIPT = BODY + '''
import json, sys, torch
import torch.nn.functional as F
threads = int(sys.argv[1]); cases = json.loads(sys.argv[2])
if sys.argv[3] == "process":
    CLOCK = time.process_time
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(0)
make = lambda s: torch.randn(*s, generator=g)
times = run_cases(torch, F, cases, make)
print(json.dumps({"version": torch.__version__, "threads": torch.get_num_threads(),
                  "mkldnn": torch.backends.mkldnn.is_available(), "times": times}))
'''


def main():
    parser = _common.base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--clock", choices=("wall", "process"), default="wall",
                        help="wall-clock time, or process CPU time (meaningful with --threads 1)")
    args = parser.parse_args()
    _common.pin_threads(args.threads)
    import subprocess

    import ember
    import ember.nn.functional as F
    ember.set_num_threads(args.threads)
    print(_common.ember_build(ember))  # which ember this run times
    cases = [c for c in CASES if not args.cases or any(s in c[0] for s in args.cases)]
    ns = {}
    exec(BODY, ns)
    if args.clock == "process":
        ns["CLOCK"] = ns["time"].process_time
    ember.manual_seed(0)
    times = ns["run_cases"](ember, F, cases, lambda s: ember.randn(*s))

    torch_times, label = {}, "PyTorch: skipped"
    py = VENV_TORCH if os.path.exists(VENV_TORCH) else _common.TORCH_PYTHON
    if not args.no_torch and os.path.exists(py):
        env = dict(os.environ, PYTHONPATH="", OMP_NUM_THREADS=str(args.threads))
        r = subprocess.run([py, "-c", TORCH_SCRIPT, str(args.threads), json.dumps(cases),
                            args.clock],
                           capture_output=True, text=True, env=env)
        if r.returncode == 0:
            res = json.loads(r.stdout.strip().splitlines()[-1])
            torch_times = res["times"]
            label = f"PyTorch {res['version']} ({res['threads']} threads, mkldnn={res['mkldnn']})"
        else:
            print("PyTorch worker failed:", r.stderr[-1500:], file=sys.stderr)
    rows = []
    for k, v in times.items():
        tt = torch_times.get(k)
        rows.append([k, _common.fmt_time(v), _common.fmt_time(tt),
                     f"{v / tt:.2f}x" if tt else "n/a"])
    _common.print_table(f"conv2d float32, {args.threads} threads, {args.clock} time; {label}",
                        ["case", "ember", "torch", "ember/torch"], rows)


if __name__ == "__main__":
    main()
