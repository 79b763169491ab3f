"""ember.nn vs PyTorch's torch.nn, side by side.

    python3 benchmarks/bench_nn.py [--threads N] [--cases SUBSTRING ...] [--no-torch]

Cases: Linear 64x784->512 forward and forward+backward; the tutorials' MLP step
(Flatten -> Linear(784, 512) -> ReLU -> Linear(512, 512) -> ReLU -> Linear(512, 10),
CrossEntropyLoss, batch 64, forward + backward), and the same as a full training
iteration (zero_grad, forward, loss, backward, SGD step); the "What is torch.nn
really?" Mnist_CNN training iteration (batch 64, SGD with momentum); fused softmax, cross entropy,
layer norm and batch norm forward + backward; gelu, silu and softplus on 1M floats,
forward and forward + backward (the fused activation kernels). Both libraries get the same thread
count, are warmed up and timed as the median of several samples (_cases.timeit).
PyTorch runs in a subprocess (this file with --worker) under /work/torchvenv/bin/python
when present, else Debian's /usr/bin/python3. Columns: median time per call and
ember's time over PyTorch's (below 1: ember is faster).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common  # noqa: E402
from _common import base_parser, fmt_time, pin_threads, print_table, run_torch_worker  # noqa: E402

if os.path.exists("/work/torchvenv/bin/python"):
    _common.TORCH_PYTHON = "/work/torchvenv/bin/python"


def parse_args():
    p = base_parser(__doc__.split("\n\n")[0], "threads for both libraries (default: all cores)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    return p.parse_args()


args = parse_args()
pin_threads(args.threads)

import numpy as np  # noqa: E402
from _cases import timeit  # noqa: E402


def _linear_fwd(lib, nn):
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((64, 784), dtype=np.float32))
    m = nn.Linear(784, 512)
    with lib.no_grad():
        return lambda: m(x)


def _linear_fwd_bwd(lib, nn):
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((64, 784), dtype=np.float32))
    x.requires_grad_()
    m = nn.Linear(784, 512)

    def step():
        x.grad = m.weight.grad = m.bias.grad = None
        m(x).sum().backward()
    return step


def _mlp_step(lib, nn):
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))
    flat, l1, r1, l2, r2, l3 = (nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                                nn.ReLU(), nn.Linear(512, 10))
    loss_fn = nn.CrossEntropyLoss()
    params = [l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias]

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(l3(r2(l2(r1(l1(flat(x)))))), y)
        loss.backward()
    return step


def _train_step(lib, model, x, y):
    """zero_grad, forward, cross entropy, backward and an SGD step: one training iteration."""
    loss_fn = lib.nn.CrossEntropyLoss()
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def _mlp_train_step(lib, nn):
    """The quickstart tutorial's model and loop body (Flatten, 784-512-512-10, SGD)."""
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                          nn.ReLU(), nn.Linear(512, 10))
    return _train_step(lib, model, x, y)


def _cnn_train_step(lib, nn):
    """"What is torch.nn really?"'s Mnist_CNN (three stride-2 3x3 convs, ReLU, 4x4 average
    pool), SGD with momentum, batch 64."""
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))
    model = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 10, 3, stride=2, padding=1), nn.ReLU(),
                          nn.AvgPool2d(4), nn.Flatten())
    return _train_step(lib, model, x, y)


def _rows(lib, shape):
    x = lib.from_numpy(np.random.default_rng(0).standard_normal(shape, dtype=np.float32))
    return x.requires_grad_()


def _softmax(lib, nn):
    x = _rows(lib, (256, 1000))

    def step():
        x.grad = None
        lib.softmax(x, 1).sum().backward()
    return step


def _cross_entropy(lib, nn):
    x = _rows(lib, (256, 1000))
    y = lib.from_numpy(np.random.default_rng(1).integers(0, 1000, 256))
    F = nn.functional

    def step():
        x.grad = None
        F.cross_entropy(x, y).backward()
    return step


def _layer_norm(lib, nn):
    x = _rows(lib, (256, 1024))
    m = nn.LayerNorm(1024)

    def step():
        x.grad = m.weight.grad = m.bias.grad = None
        m(x).sum().backward()
    return step


def _batch_norm(lib, nn):
    x = _rows(lib, (64, 64, 16, 16))
    m = nn.BatchNorm2d(64)

    def step():
        x.grad = m.weight.grad = m.bias.grad = None
        m(x).sum().backward()
    return step


def _activation(name, backward):
    """F.<name> on 1M float32 elements: forward under no_grad, or forward + backward."""
    def make(lib, nn):
        f = getattr(nn.functional, name)
        x = lib.from_numpy(np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32))
        if not backward:
            def fwd():
                with lib.no_grad():
                    return f(x)
            return fwd
        x.requires_grad_()
        g = lib.ones_like(x)

        def step():
            x.grad = None
            f(x).backward(g)
        return step
    return make


CASES = {
    "Linear 64x784->512 forward (no grad)": _linear_fwd,
    "Linear 64x784->512 fwd+bwd": _linear_fwd_bwd,
    "MLP step 784-512-512-10 + CE, bs 64, fwd+bwd": _mlp_step,
    "MLP train step (quickstart, SGD), bs 64": _mlp_train_step,
    "CNN train step (Mnist_CNN, SGD momentum), bs 64": _cnn_train_step,
    "softmax 256x1000 fwd+bwd": _softmax,
    "cross_entropy 256x1000 fwd+bwd": _cross_entropy,
    "LayerNorm(1024) 256 rows fwd+bwd": _layer_norm,
    "BatchNorm2d(64) 64x64x16x16 fwd+bwd": _batch_norm,
    "gelu 1M float32 forward": _activation("gelu", False),
    "gelu 1M float32 fwd+bwd": _activation("gelu", True),
    "silu 1M float32 forward": _activation("silu", False),
    "silu 1M float32 fwd+bwd": _activation("silu", True),
    "softplus 1M float32 forward": _activation("softplus", False),
    "softplus 1M float32 fwd+bwd": _activation("softplus", True),
}


def run_cases(lib, nn, names, set_threads):
    set_threads(args.threads)
    out = {}
    for name in names:
        lib.manual_seed(0)
        fn = CASES[name](lib, nn)
        out[name] = timeit(fn)
        del fn
    return out


def worker():
    import torch
    import torch.optim  # noqa: F401
    res = {"version": torch.__version__,
           "times": run_cases(torch, torch.nn, args.names, torch.set_num_threads)}
    print(json.dumps(res))


def main():
    import ember
    import ember.nn
    import ember.optim  # noqa: F401
    print(_common.ember_build(ember))  # which ember this run times
    names = [n for n in CASES if args.cases is None or any(c in n for c in args.cases)]
    print(f"threads: {args.threads} (cores: {os.cpu_count()}); ember {ember.__version__}",
          file=sys.stderr)
    local = run_cases(ember, ember.nn, names, ember.set_num_threads)
    torch_version, torch_times = run_torch_worker(
        [os.path.abspath(__file__), "--worker", "--threads", str(args.threads), *names],
        skip=args.no_torch)
    torch_label = f"PyTorch {torch_version}" if torch_version else "PyTorch (not run)"
    rows = []
    for n in names:
        te, tt = local[n], torch_times.get(n)
        ratio = f"{te / tt:.2f}x" if te is not None and tt is not None else "n/a"
        rows.append([n, fmt_time(te), fmt_time(tt), ratio])
    print_table(f"ember {ember.__version__} | {torch_label} | {args.threads} threads | medians "
                f"after warm-up", ["case", "ember", torch_label, "ember/torch"], rows)


if __name__ == "__main__":
    if args.worker:
        worker()
    else:
        main()
