"""ember vs PyTorch on the GPU, side by side (needs a CUDA GPU; prints why not otherwise).

    python3 benchmarks/bench_cuda.py [--cases SUBSTRING ...]

Each case is warmed up and timed with CUDA events around a batch of calls
(median of several batches); PyTorch runs in a subprocess under
/work/torchvenv/bin/python (or /usr/bin/python3) after ember, never at the same
time. Cases ember has no CUDA kernel for yet show as n/a.
"""
import argparse
import json
import os
import subprocess
import sys

CASES = {
    # name: (bytes moved or flops per call, is_flops, setup source producing `fn`)
    "small add launch (1 elem)": (0, False, "a = lib.ones(1, device='cuda'); fn = lambda: a + a"),
    "device copy 256 MiB (GB/s)": (2 * 64 * 2**20 * 4, False,
                                   "a = lib.ones(64 * 2**20, device='cuda'); b = lib.empty_like(a); fn = lambda: b.copy_(a)"),
    "fill_ 256 MiB (GB/s)": (64 * 2**20 * 4, False,
                             "a = lib.empty(64 * 2**20, device='cuda'); fn = lambda: a.fill_(1.5)"),
    "add 64M f32 (GB/s)": (3 * 64 * 2**20 * 4, False,
                           "a = lib.ones(64 * 2**20, device='cuda'); fn = lambda: a + a"),
    "sum 64M f32 (GB/s)": (64 * 2**20 * 4, False,
                           "a = lib.ones(64 * 2**20, device='cuda'); fn = lambda: a.sum()"),
    "softmax 65536x4096 (GB/s)": (2 * 65536 * 4096 * 4, False,
                                  "a = lib.randn(65536, 4096, device='cuda'); fn = lambda: a.softmax(-1)"),
    "matmul 4096^3 fp32 (TF/s)": (2 * 4096**3, True,
                                  "a = lib.randn(4096, 4096, device='cuda'); fn = lambda: a @ a"),
    "matmul 4096^3 bf16 (TF/s)": (2 * 4096**3, True,
                                  "a = lib.randn(4096, 4096, device='cuda').to(lib.bfloat16); fn = lambda: a @ a"),
    "H2D pageable 256 MiB (GB/s)": (64 * 2**20 * 4, False,
                                    "a = lib.ones(64 * 2**20); fn = lambda: a.to('cuda')"),
    "H2D pinned 256 MiB (GB/s)": (64 * 2**20 * 4, False,
                                  "a = lib.ones(64 * 2**20).pin_memory(); fn = lambda: a.to('cuda', non_blocking=True)"),
}

TIMER = r'''
import json, statistics, sys
import {lib} as lib
out = {{}}
for name, src in json.loads(sys.argv[1]).items():
    try:
        ns = {{"lib": lib}}
        exec(src, ns)
        fn = ns["fn"]
        for _ in range(3):
            fn()
        lib.cuda.synchronize()
        times = []
        for _ in range(7):
            s, e = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3 / 10)
        out[name] = statistics.median(times)
    except Exception as ex:  # an op without a CUDA kernel
        out[name] = "n/a: " + type(ex).__name__ + ": " + str(ex).splitlines()[0][:60]
print(json.dumps(out))
'''


def run(python, lib, cases, env=None):
    src = {k: CASES[k][2] for k in cases}
    p = subprocess.run([python, "-c", TIMER.format(lib=lib), json.dumps(src)], capture_output=True,
                       text=True, timeout=900, env=env)
    if p.returncode != 0:
        return {k: "n/a: " + (p.stderr.strip().splitlines() or ["failed"])[-1][:60] for k in cases}
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(name, t):
    if not isinstance(t, float):
        return t
    amount, flops, _ = CASES[name]
    if amount == 0:
        return f"{t * 1e6:.2f} us"
    return f"{amount / t / 1e12:.1f} TF/s" if flops else f"{amount / t / 1e9:.0f} GB/s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="*", default=[])
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.path.join(here, "..", "python"))
    probe = subprocess.run([sys.executable, "-c", "import ember; print(ember.cuda.is_available())"],
                           capture_output=True, text=True, env=env)
    if probe.stdout.strip() != "True":
        print("bench_cuda: no CUDA GPU (or a CPU-only ember build): nothing to time")
        return
    cases = [k for k in CASES if not args.cases or any(s in k for s in args.cases)]
    ours = run(sys.executable, "ember", cases, env)
    torch_py = next((p for p in ("/work/torchvenv/bin/python", "/usr/bin/python3") if os.path.exists(p)), None)
    theirs = run(torch_py, "torch", cases) if torch_py else {k: "n/a" for k in cases}
    w = max(len(k) for k in cases) + 2
    print(f"{'case':<{w}}{'ember':>28}{'PyTorch':>28}{'ember/torch time':>18}")
    for k in cases:
        a, b = ours.get(k), theirs.get(k)
        ratio = f"{a / b:.2f}x" if isinstance(a, float) and isinstance(b, float) else "n/a"
        print(f"{k:<{w}}{fmt(k, a):>28}{fmt(k, b):>28}{ratio:>18}")


if __name__ == "__main__":
    main()
