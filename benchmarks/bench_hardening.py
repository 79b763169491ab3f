"""The ops issue 24 rewrote, and checkpoint I/O with its checksums: ember vs PyTorch.

    PYTHONPATH=python python3 benchmarks/bench_hardening.py [--threads N] [--rounds 3]

tril/triu_indices (closed-form size, parallel fill), combinations (iterative, sized
first), logcumsumexp (a running-max scan kernel instead of exp/cumsum/log), and
save + load of a 64 MiB state dict (ember: safetensors layout with CRC-32C of header and
data, written to a temporary file, fsynced and renamed; PyTorch: its zip format).

Each case: warm-up, then the median of repeats; the two libraries run in alternating
processes for --rounds rounds (PyTorch from /work/torchvenv/bin/python or TORCH_PYTHON,
same thread count), and the table shows the median over rounds with the spread
(min-max) and the ratio ember / PyTorch (below 1: ember faster).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

TORCH_PY = os.environ.get("TORCH_PYTHON", "/work/torchvenv/bin/python")


def cases(lib, tmpdir):
    import numpy as np
    rng = np.random.default_rng(0)
    x1m = lib.from_numpy(rng.standard_normal(1 << 20).astype(np.float32))
    x2d = lib.from_numpy((rng.standard_normal((256, 4096)) * 50).astype(np.float32))
    sd = {f"layer{i}.weight": lib.from_numpy(rng.standard_normal((1024, 1024)).astype(np.float32))
          for i in range(16)}
    path = os.path.join(tmpdir, f"ckpt_{lib.__name__}.pt")

    def save_load():
        lib.save(sd, path)
        return lib.load(path)

    return {
        "tril_indices(10000, 10000)": lambda: lib.tril_indices(10000, 10000),
        "triu_indices(3000, 5000, 7)": lambda: lib.triu_indices(3000, 5000, 7),
        "combinations(arange(60), 3)": lambda: lib.combinations(lib.arange(60), 3),
        "logcumsumexp 1M float32": lambda: lib.logcumsumexp(x1m, 0),
        "logcumsumexp 256x4096 dim=1": lambda: lib.logcumsumexp(x2d, 1),
        "save+load 64 MiB state dict": save_load,
    }


def time_all(lib, only):
    times = {}
    with tempfile.TemporaryDirectory() as d:
        for name, fn in cases(lib, d).items():
            if only and not any(o in name for o in only):
                continue
            fn()
            reps = []
            deadline = time.perf_counter() + 2.0
            while len(reps) < 3 or (time.perf_counter() < deadline and len(reps) < 30):
                t0 = time.perf_counter()
                fn()
                reps.append(time.perf_counter() - t0)
            reps.sort()
            times[name] = reps[len(reps) // 2]
    return times


def worker(lib_name, threads, only):
    _common.pin_threads(threads)
    if lib_name == "torch":
        import torch as lib
        lib.set_grad_enabled(False)
        version = f"PyTorch {lib.__version__}"
    else:
        import ember as lib
        version = "ember"
    lib.set_num_threads(threads)
    print(json.dumps({"version": version, "times": time_all(lib, only)}))


def run(lib_name, threads, only):
    python = TORCH_PY if lib_name == "torch" else sys.executable
    cmd = [python, os.path.abspath(__file__), "--worker", lib_name, "--threads", str(threads)]
    if only:
        cmd += ["--cases", *only]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:], file=sys.stderr)
        return None, {}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["version"], r["times"]


def main():
    p = _common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--worker", default=None)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.threads, args.cases)
    libs = ["ember"] + ([] if args.no_torch or not os.path.exists(TORCH_PY) else ["torch"])
    samples = {lib: {} for lib in libs}
    version = None
    for _ in range(args.rounds):
        for lib in libs:  # alternating processes
            v, times = run(lib, args.threads, args.cases)
            if lib == "torch":
                version = v
            for k, t in times.items():
                samples[lib].setdefault(k, []).append(t)

    def med(v):
        return sorted(v)[len(v) // 2] if v else None
    rows = []
    for name, ts in samples["ember"].items():
        te, tt = med(ts), med(samples.get("torch", {}).get(name, []))
        spread = f"{_common.fmt_time(min(ts))}-{_common.fmt_time(max(ts))}"
        rows.append([name, _common.fmt_time(te), spread, _common.fmt_time(tt),
                     f"{te / tt:.2f}" if tt else "n/a"])
    _common.print_table(f"ember vs {version or 'no PyTorch'}, {args.threads} thread(s), "
                        f"{args.rounds} rounds (medians)",
                        ["case", "ember", "ember spread", "PyTorch", "ratio"], rows)


if __name__ == "__main__":
    main()
