"""ember.jit vs PyTorch's torch.jit, in one run.

    python3 benchmarks/bench_jit.py [--threads 1 2] [--rounds 5] [--cases resnet mlp]

Cases (issue 20, section 9):
- resnet18 forward, batch 1 and 8, 224x224, eval mode, no grad: ember eager, ember traced
  (ember.jit.trace), PyTorch eager and PyTorch torch.jit.trace (torchvision's resnet18);
- a small MLP's forward (batch 8, 64 -> 128 -> 128 -> 10): ember eager from Python, ember
  traced from Python, the same archive run by a C++ program through <ember/script.h>
  (benchmarks/cpp/bench_jit_mlp.cpp, built with CMake against ember.utils.cmake_prefix_path),
  and a PyTorch torch.jit module called from Python.

Every measurement runs in its own process (ember's and PyTorch's alternate), one round
after another; each process warms up, then reports the median of many calls. The table
shows the median over rounds, the spread (min-max over rounds) and ratios. Same thread
count for every library (set before any import).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _common import PYPI_TORCH_PYTHON, ember_build, fmt_time, print_table  # noqa: E402

MLP_SHAPE = (8, 64)


def _median_call(fn, min_time=1.0, min_calls=5):
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < min_calls:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ---- workers (run as `python bench_jit.py --worker KIND CASE THREADS [ARCHIVE]`) ----------

def worker_ember(case, threads, archive=None):
    import ember
    ember.set_num_threads(threads)
    ember.manual_seed(0)
    out = {}
    if case.startswith("resnet"):
        from ember.vision.models import resnet18
        batch = int(case.split("_b")[1])
        model = resnet18().eval()
        x = ember.randn(batch, 3, 224, 224)
        with ember.no_grad():
            traced = ember.jit.trace(model, x, check_trace=False)
            out["ember eager"] = _median_call(lambda: model(x), 3.0, 3)
            out["ember jit"] = _median_call(lambda: traced(x), 3.0, 3)
    else:
        model = _ember_mlp(ember).eval()
        x = ember.randn(*MLP_SHAPE)
        with ember.no_grad():
            traced = ember.jit.trace(model, x, check_trace=False)
            out["ember eager"] = _median_call(lambda: model(x))
            out["ember jit (Python)"] = _median_call(lambda: traced(x))
        if archive:
            traced.save(archive)
    return out


def _ember_mlp(ember):
    nn = ember.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def worker_torch(case, threads):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    out = {}
    if case.startswith("resnet"):
        from torchvision.models import resnet18
        batch = int(case.split("_b")[1])
        model = resnet18().eval()
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            traced = torch.jit.trace(model, x, check_trace=False)
            out["torch eager"] = _median_call(lambda: model(x), 3.0, 3)
            out["torch.jit"] = _median_call(lambda: traced(x), 3.0, 3)
    else:
        nn = torch.nn
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                              nn.Linear(128, 10)).eval()
        x = torch.randn(*MLP_SHAPE)
        with torch.no_grad():
            traced = torch.jit.trace(model, x, check_trace=False)
            out["torch eager"] = _median_call(lambda: model(x))
            out["torch.jit (Python)"] = _median_call(lambda: traced(x))
    out["version"] = torch.__version__
    return out


def worker_cpp(binary, archive, threads):
    env = dict(os.environ, EMBER_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    p = subprocess.run([binary, archive, str(MLP_SHAPE[0]), str(MLP_SHAPE[1])], capture_output=True,
                       text=True, env=env, check=True)
    return {"ember jit (C++)": float(p.stdout.strip().splitlines()[-1])}


# ---- driver -------------------------------------------------------------------------------------

def _run(cmd, threads, python=sys.executable):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), EMBER_NUM_THREADS=str(threads))
    if python != sys.executable:
        env["PYTHONPATH"] = ""
    p = subprocess.run([python, os.path.abspath(__file__), "--worker", *cmd], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        print(p.stderr[-3000:], file=sys.stderr)
        return {}
    return json.loads(p.stdout.strip().splitlines()[-1])


def build_cpp(tmp):
    import ember.utils
    src = os.path.join(HERE, "cpp")
    build = os.path.join(tmp, "build")
    os.makedirs(build, exist_ok=True)
    subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                    f"-DCMAKE_PREFIX_PATH={ember.utils.cmake_prefix_path}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    return os.path.join(build, "bench_jit_mlp")


def main():
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cases", nargs="*", default=["resnet_b1", "resnet_b8", "mlp"])
    p.add_argument("--worker", nargs="*")
    a = p.parse_args()
    if a.worker:
        kind, case, threads, *rest = a.worker
        if kind == "ember":
            r = worker_ember(case, int(threads), rest[0] if rest else None)
        elif kind == "torch":
            r = worker_torch(case, int(threads))
        else:
            r = worker_cpp(rest[0], rest[1], int(threads))
        print(json.dumps(r))
        return
    torch_py = PYPI_TORCH_PYTHON if os.path.exists(PYPI_TORCH_PYTHON) else None
    import ember
    print(ember_build(ember))  # which build these numbers time
    tmp = tempfile.mkdtemp(prefix="bench_jit_")
    try:
        binary = build_cpp(tmp) if any(c.startswith("mlp") for c in a.cases) else None
        archive = os.path.join(tmp, "mlp.pt")
        version = None
        for threads in a.threads:
            for case in a.cases:
                samples = {}
                for _ in range(a.rounds):
                    res = _run(["ember", case, str(threads)] + ([archive] if case == "mlp" else []),
                               threads)
                    if torch_py:
                        tr = _run(["torch", case, str(threads)], threads, torch_py)
                        version = tr.pop("version", version)
                        res.update(tr)
                    if case == "mlp" and binary and os.path.exists(archive):
                        res.update(_run(["cpp", case, str(threads), binary, archive], threads))
                    for k, v in res.items():
                        samples.setdefault(k, []).append(v)
                _table(case, threads, samples, version)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _table(case, threads, samples, version):
    med = {k: statistics.median(v) for k, v in samples.items()}
    ref = "ember eager"
    rows = []
    for k, v in med.items():
        vs = samples[k]
        ratios = [f"{v / med[r]:.2f}x {r}" for r in ("ember eager", "torch.jit", "torch.jit (Python)")
                  if r in med and r != k]
        rows.append([k, fmt_time(v), f"{fmt_time(min(vs))} - {fmt_time(max(vs))}", ", ".join(ratios)])
    del ref
    title = (f"\n{case} forward, {threads} thread(s), median of {len(next(iter(samples.values())))} "
             f"rounds" + (f" (PyTorch {version})" if version else ""))
    print_table(title, ["", "time", "spread", "ratio"], rows)


if __name__ == "__main__":
    main()
