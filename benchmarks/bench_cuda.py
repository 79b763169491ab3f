"""ember vs PyTorch on the GPU, side by side (needs a CUDA GPU; prints why not otherwise).

    python3 benchmarks/bench_cuda.py [--cases SUBSTRING ...]

Each case is warmed up and timed with CUDA events around a batch of calls
(median of several batches). ember is the one this interpreter imports (the installed
wheel; the header says which file); PyTorch runs in a subprocess under $TORCH_PYTHON, else
/work/torchvenv/bin/python, else /usr/bin/python3, after ember, never at the same time. Cases that fail show as n/a with the error. The training-step cases also count the
cudaMalloc calls (segments allocated) of 20 more steps: a warm caching allocator makes none.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

# One training step (zero_grad, forward, cross entropy, backward, SGD with momentum) of `model`
# on a fixed random batch of FashionMNIST's shape, everything on the GPU.
STEP = (
    "nn = lib.nn; model = {model}.to('cuda'); "
    "opt = lib.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9); "
    "x = lib.randn({bs}, 1, 28, 28, device='cuda'); y = lib.randint(0, 10, ({bs},), device='cuda'); "
    "loss_fn = nn.CrossEntropyLoss()\n"
    "def fn():\n"
    "    opt.zero_grad()\n"
    "    loss_fn(model(x), y).backward()\n"
    "    opt.step()\n"
)
# The quickstart's NeuralNetwork, and "What is torch.nn really?"'s Mnist_CNN.
MLP = ("nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), "
       "nn.ReLU(), nn.Linear(512, 10))")
CNN = ("nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(), "
       "nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(), "
       "nn.Conv2d(16, 10, 3, stride=2, padding=1), nn.ReLU(), nn.AvgPool2d(4), nn.Flatten())")

# The lecture seed's ratio_iou (8 inputs, 1 output: one fused kernel under compile) and a
# masked, scaled softmax (a row group), eager and through lib.compile (ember: NVRTC fusion;
# torch: Inductor/Triton where that machine has Triton).
IOU = (
    "def iou(x1, y1, w1, h1, x2, y2, w2, h2):\n"
    "    xi = lib.max(x1, x2); yi = lib.max(y1, y2)\n"
    "    wi = lib.clamp(lib.min(x1 + w1, x2 + w2) - xi, min=0)\n"
    "    hi = lib.clamp(lib.min(y1 + h1, y2 + h2) - yi, min=0)\n"
    "    return wi * hi / lib.clamp(w1 * h1 + w2 * h2 - wi * hi, min=1e-5)\n"
    "xs = [lib.rand(8, 100, 1000, device='cuda') + 0.1 for _ in range(8)]\n"
    "f = {wrap}(iou)\n"
    "fn = lambda: f(*xs)\n"
)
MASKED_SOFTMAX = (
    "a = lib.randn(8192, 1024, device='cuda'); m = lib.rand(8192, 1024, device='cuda') > 0.9\n"
    "f = {wrap}(lambda a, m: (a * 0.125).masked_fill(m, float('-inf')).softmax(-1) * 2)\n"
    "fn = lambda: f(a, m)\n"
)

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
                                  "lib.backends.cuda.matmul.allow_tf32 = False; "
                                  "a = lib.randn(4096, 4096, device='cuda'); fn = lambda: a @ a"),
    "matmul 4096^3 tf32 (TF/s)": (2 * 4096**3, True,
                                  "lib.backends.cuda.matmul.allow_tf32 = True; "
                                  "a = lib.randn(4096, 4096, device='cuda'); fn = lambda: a @ a"),
    "matmul 4096^3 bf16 (TF/s)": (2 * 4096**3, True,
                                  "lib.backends.cuda.matmul.allow_tf32 = False; "
                                  "a = lib.randn(4096, 4096, device='cuda').to(lib.bfloat16); fn = lambda: a @ a"),
    "quickstart MLP step, bs 64": (0, False, STEP.format(bs=64, model=MLP)),
    "tutorial CNN step, bs 64": (0, False, STEP.format(bs=64, model=CNN)),
    "tutorial CNN step, bs 512": (0, False, STEP.format(bs=512, model=CNN)),
    "ratio_iou 8x100x1000 eager (GB/s)": (9 * 8 * 100 * 1000 * 4, False, IOU.format(wrap="")),
    "ratio_iou 8x100x1000 compiled (GB/s)": (9 * 8 * 100 * 1000 * 4, False,
                                             IOU.format(wrap="lib.compile")),
    "masked softmax 8192x1024 eager (GB/s)": (9 * 8192 * 1024, False, MASKED_SOFTMAX.format(wrap="")),
    "masked softmax 8192x1024 compiled (GB/s)": (9 * 8192 * 1024, False,
                                                 MASKED_SOFTMAX.format(wrap="lib.compile")),
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
        if "step" in name:  # cudaMalloc calls in 20 more steady-state steps (goal: 0)
            key = "num_device_alloc" if lib.__name__ == "ember" else "segment.all.allocated"
            before = lib.cuda.memory_stats().get(key, 0)
            for _ in range(20):
                fn()
            lib.cuda.synchronize()
            out[name + " [cudaMalloc in 20 steps]"] = lib.cuda.memory_stats().get(key, 0) - before
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


def fmt(name, t, notes=None):
    """The cell for a case's time; an error becomes "n/a [k]", its text listed under the table."""
    if not isinstance(t, float):
        if notes is None:
            return str(t)
        notes.append(str(t))
        return f"n/a [{len(notes)}]"
    amount, flops, _ = CASES[name]
    if amount == 0:
        return f"{t * 1e6:.2f} us"
    return f"{amount / t / 1e12:.1f} TF/s" if flops else f"{amount / t / 1e9:.0f} GB/s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="*", default=[])
    args = ap.parse_args()
    probe = subprocess.run([sys.executable, "-c", "import ember; print(ember.cuda.is_available(), ember.__file__)"],
                           capture_output=True, text=True)
    available, _, where = probe.stdout.strip().partition(" ")
    if available != "True":
        print("bench_cuda: no CUDA GPU (or a CPU-only ember build): nothing to time")
        return
    print(f"bench_cuda: timing ember from {where}")
    cases = [k for k in CASES if not args.cases or any(s in k for s in args.cases)]
    ours = run(sys.executable, "ember", cases)
    # the first interpreter (a path or a name on PATH) that imports torch
    candidates = (os.environ.get("TORCH_PYTHON", ""), sys.executable, "/work/torchvenv/bin/python",
                  "/usr/bin/python3")
    torch_py = next((p for p in (shutil.which(c) for c in candidates if c)
                     if p and subprocess.run([p, "-c", "import torch"], capture_output=True).returncode == 0),
                    None)
    theirs = run(torch_py, "torch", cases) if torch_py else {k: "n/a" for k in cases}
    w = max(len(k) for k in cases) + 2
    notes = []
    print(f"{'case':<{w}}{'ember':>16}{'PyTorch':>16}{'ember/torch time':>18}")
    for k in cases:
        a, b = ours.get(k), theirs.get(k)
        ratio = f"{a / b:.2f}x" if isinstance(a, float) and isinstance(b, float) else "n/a"
        print(f"{k:<{w}}{fmt(k, a, notes):>16}{fmt(k, b, notes):>16}{ratio:>18}")
        extra = k + " [cudaMalloc in 20 steps]"
        if extra in ours or extra in theirs:
            print(f"{'  cudaMalloc calls in 20 more steps':<{w}}{str(ours.get(extra, 'n/a')):>16}"
                  f"{str(theirs.get(extra, 'n/a')):>16}")
    for i, n in enumerate(notes, 1):
        print(f"[{i}] {n}")


if __name__ == "__main__":
    main()
