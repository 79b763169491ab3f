"""Recurrent layers and attention, ember vs PyTorch, forward + backward.

Cases (the issue's targets):
  lstm: nn.LSTM-equivalent layer, seq 100, batch 64, input 256, hidden 256
  sdpa: scaled_dot_product_attention, B 8, H 8, L 512, D 64
Both libraries run with the same thread count; medians of --repeat runs after
warm-up. PyTorch runs in a subprocess (this script with --torch-worker) under
/work/torchvenv/bin/python when present, else _common.TORCH_PYTHON.

    PYTHONPATH=python python3 benchmarks/bench_rnn.py --threads 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TORCH_PY = "/work/torchvenv/bin/python"
CASES = {
    "lstm fwd+bwd (T100 B64 I256 H256)": ("lstm", dict(T=100, B=64, I=256, H=256)),
    "gru fwd+bwd (T100 B64 I256 H256)": ("gru", dict(T=100, B=64, I=256, H=256)),
    "sdpa fwd+bwd (B8 H8 L512 D64)": ("sdpa", dict(B=8, H=8, L=512, D=64, causal=False)),
    "sdpa causal fwd+bwd (B8 H8 L512 D64)": ("sdpa", dict(B=8, H=8, L=512, D=64, causal=True)),
    "sdpa fwd only (B8 H8 L512 D64)": ("sdpa_fwd", dict(B=8, H=8, L=512, D=64, causal=False)),
    "sdpa dropout 0.1 fwd+bwd (B8 H8 L512 D64)": ("sdpa", dict(B=8, H=8, L=512, D=64,
                                                                causal=False, dropout=0.1)),
}


def _median_time(fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def make_case(lib, kind, p):
    """Returns a no-argument callable running one iteration with library `lib`
    (the ember or torch module)."""
    if kind in ("lstm", "gru"):
        T, B, In, H = p["T"], p["B"], p["I"], p["H"]
        G = 4 if kind == "lstm" else 3
        lib.manual_seed(0)
        x = (lib.rand(T, B, In) - 0.5).requires_grad_(True)
        ps = [((lib.rand(*s) - 0.5) * 0.1).requires_grad_(True)
              for s in ((G * H, In), (G * H, H), (G * H,), (G * H,))]
        h = lib.zeros(1, B, H)
        hx = [h, lib.zeros(1, B, H)] if kind == "lstm" else h
        f = getattr(lib, kind)

        def run():
            out = f(x, hx, ps, True, 1, 0.0, True, False, False)
            out[0].sum().backward()
        return run
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    lib.manual_seed(0)
    q, k, v = (lib.randn(B, H, L, D).requires_grad_(kind == "sdpa") for _ in range(3))
    sdpa = lib.nn.functional.scaled_dot_product_attention
    if kind == "sdpa_fwd":
        def run():
            with lib.no_grad():
                sdpa(q, k, v, is_causal=p["causal"])
        return run

    def run():
        sdpa(q, k, v, is_causal=p["causal"], dropout_p=p.get("dropout", 0.0)).sum().backward()
    return run


def worker(lib_name, threads, repeat, names):
    if lib_name == "torch":
        import torch as lib
        lib.set_num_threads(threads)
        version = lib.__version__
    else:
        import ember as lib
        import ember.nn.functional  # noqa: F401
        lib.set_num_threads(threads)
        version = "ember"
    times = {}
    for name in names:
        kind, p = CASES[name]
        times[name] = _median_time(make_case(lib, kind, p), repeat)
    return version, times


def main():
    ap = _common.base_parser(__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternate ember and PyTorch this many times; each library's figure is "
                         "its best round's median (the machine may be shared)")
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [n for n in CASES if not args.cases or any(c in n for c in args.cases)]
    if args.torch_worker:
        version, times = worker("torch", args.threads, args.repeat, names)
        print(json.dumps({"version": version, "times": times}))
        return
    _common.pin_threads(args.threads)
    py = TORCH_PY if os.path.exists(TORCH_PY) else _common.TORCH_PYTHON
    import ember
    print(_common.ember_build(ember))  # which ember this run times
    et, tt, tv = {}, {}, None
    for _ in range(max(1, args.rounds)):
        _, times = worker("ember", args.threads, args.repeat, names)
        for n, t in times.items():
            et[n] = min(t, et.get(n, t))
        if args.no_torch or not os.path.exists(py):
            continue
        cmd = [py, os.path.abspath(__file__), "--torch-worker", "--threads", str(args.threads),
               "--repeat", str(args.repeat)]
        if args.cases:
            cmd += ["--cases", *args.cases]
        env = dict(os.environ, PYTHONPATH="")
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = str(args.threads)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print("PyTorch worker failed:\n" + r.stderr[-2000:], file=sys.stderr)
            continue
        res = json.loads(r.stdout.strip().splitlines()[-1])
        tv = res["version"]
        for n, t in res["times"].items():
            tt[n] = min(t, tt.get(n, t))
    rows = []
    for n in names:
        t = tt.get(n)
        rows.append([n, _common.fmt_time(et[n]), _common.fmt_time(t),
                     f"{et[n] / t:.2f}x" if t else "n/a"])
    _common.print_table(f"threads={args.threads}, torch={tv or 'n/a'} (ratio: ember / torch, "
                        "lower is better)", ["case", "ember", "torch", "ratio"], rows)


if __name__ == "__main__":
    main()
