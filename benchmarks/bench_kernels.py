"""The CPU kernels of issue 25 (losses, pooling, Linear, LSTM/GRU, convolution, float16 loops), ember vs
PyTorch, in alternating processes.

    python3 benchmarks/bench_kernels.py [--threads N ...] [--rounds R] [--cases SUBSTRING ...]
                                        [--no-torch] [--smoke]

Each round runs one fresh ember process and then one fresh PyTorch process (PyTorch from PyPI in
/work/torchvenv, or $TORCH_PYTHON); each process warms every case up and times it as a median of
several samples (_cases.timeit). The table gives, per thread count, the median over the rounds
of each library's time, their ratio (ember / PyTorch, below 1: ember is faster) and the spread of
the per-round ratios. The first lines name the builds timed: ember is whatever this interpreter
imports (the installed wheel, or python/ember when PYTHONPATH=python), so run it the way a user
would. --before PYTHONPATH adds an earlier ember build to every round (its ratio is the
"before/PyTorch" column). --smoke times each case once, on one round, without PyTorch (tests/test_benchmarks.py
runs it so the cases never rot).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common  # noqa: E402
import numpy as np  # noqa: E402


def _arr(lib, shape, seed=0, grad=False):
    x = lib.from_numpy(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))
    return x.requires_grad_() if grad else x


def _cross_entropy(lib):
    x = _arr(lib, (256, 1000), grad=True)
    y = lib.from_numpy(np.random.default_rng(1).integers(0, 1000, 256))
    F = lib.nn.functional

    def step():
        x.grad = None
        F.cross_entropy(x, y).backward()
    return step


def _nll(lib):
    x = _arr(lib, (256, 1000), grad=True)
    y = lib.from_numpy(np.random.default_rng(1).integers(0, 1000, 256))
    F = lib.nn.functional

    def step():
        x.grad = None
        F.nll_loss(F.log_softmax(x, 1), y).backward()
    return step


def _pool(kind):
    def make(lib):
        x = _arr(lib, (64, 64, 24, 24), grad=True)
        f = getattr(lib.nn.functional, kind)

        def step():
            x.grad = None
            f(x, 2).sum().backward()
        return step
    return make


def _pool_fwd(kind):
    def make(lib):
        x = _arr(lib, (64, 64, 24, 24))
        f = getattr(lib.nn.functional, kind)

        def step():
            with lib.no_grad():
                return f(x, 2)
        return step
    return make


def _linear_fwd(lib, batch=64, features=(784, 512)):
    x = _arr(lib, (batch, features[0]))
    m = lib.nn.Linear(*features)

    def step():
        with lib.no_grad():
            return m(x)
    return step


def _linear_fwd_bwd(lib):
    x = _arr(lib, (64, 784), grad=True)
    m = lib.nn.Linear(784, 512)

    def step():
        x.grad = m.weight.grad = m.bias.grad = None
        m(x).sum().backward()
    return step


def _rnn(kind, backward=True):
    def make(lib):
        m = getattr(lib.nn, kind)(128, 256)
        x = _arr(lib, (50, 32, 128), grad=backward)
        params = list(m.parameters())

        def step():
            if not backward:
                with lib.no_grad():
                    return m(x)
            x.grad = None
            for p in params:
                p.grad = None
            m(x)[0].sum().backward()
        return step
    return make


def _conv(n, cin, cout, hw, k, pad=0, stride=1, backward=True):
    def make(lib):
        x = _arr(lib, (n, cin, hw, hw), grad=backward)
        m = lib.nn.Conv2d(cin, cout, k, stride=stride, padding=pad)

        def step():
            if not backward:
                with lib.no_grad():
                    return m(x)
            x.grad = m.weight.grad = m.bias.grad = None
            m(x).sum().backward()
        return step
    return make


def _resnet18_fwd(lib):
    # issue 20's resnet18 batch-8 forward, eager (eval mode, no grad)
    if lib.__name__ == "torch":
        import torchvision.models as models
    else:
        import ember.vision.models as models
    m = models.resnet18().eval()
    x = _arr(lib, (8, 3, 224, 224))

    def step():
        with lib.no_grad():
            return m(x)
    return step


def _norm(kind):
    def make(lib):
        if kind == "layer":
            x, m = _arr(lib, (256, 1024), grad=True), lib.nn.LayerNorm(1024)
        else:
            x, m = _arr(lib, (64, 64, 16, 16), grad=True), lib.nn.BatchNorm2d(64)

        def step():
            x.grad = m.weight.grad = m.bias.grad = None
            m(x).sum().backward()
        return step
    return make


def _adamw(lib):
    params = [_arr(lib, s, seed=i, grad=True) for i, s in enumerate([(512, 784), (512,),
                                                                      (512, 512), (10, 512)])]
    for i, p in enumerate(params):
        p.grad = _arr(lib, tuple(p.shape), seed=10 + i)
    opt = lib.optim.AdamW(params, lr=1e-3)
    return opt.step


def _half(op):
    # float16 elementwise loops (Note [Half loops]): 1M elements
    def make(lib):
        x, y = _arr(lib, (1 << 20,)), _arr(lib, (1 << 20,), seed=1)
        h, g = x.half(), y.half()
        F = lib.nn.functional
        return {"add": lambda: h + g, "mul scalar": lambda: h * 2.0, "exp": lambda: h.exp(),
                "gelu": lambda: F.gelu(h), "to float32": lambda: h.float(),
                "from float32": lambda: x.half()}[op]
    return make


def _lerp_and_avgpool(op):
    # torch.lerp in one pass (fn::Lerp): 1M elements, a number or a tensor weight, in place,
    # float16, and the global average pool of ResNet's head (a mean over the pooled dims)
    def make(lib):
        x, y = _arr(lib, (1 << 20,)), _arr(lib, (1 << 20,), seed=1)
        w = _arr(lib, (1 << 20,), seed=2).abs()
        h, g = x.half(), y.half()
        a = _arr(lib, (8, 512, 7, 7))
        F = lib.nn.functional
        return {"number": lambda: lib.lerp(x, y, 0.3), "tensor": lambda: lib.lerp(x, y, w),
                "in place": lambda: x.lerp_(y, 0.1), "float16": lambda: lib.lerp(h, g, 0.3),
                "avgpool": lambda: F.adaptive_avg_pool2d(a, 1)}[op]
    return make


def _short_rows(op):
    # a reduction over short rows (one kept, one reduced dim): [1M, 4] over dim 1
    def make(lib):
        x = _arr(lib, (1 << 20, 4))
        return {"sum": lambda: x.sum(1), "amax": lambda: x.amax(1),
                "max": lambda: x.max(1)}[op]
    return make


def _dropout(op):
    # Note [Vector Philox]: dropout's mask, 1024 x 768 floats (training mode)
    def make(lib):
        x = _arr(lib, (1024, 768))
        F = lib.nn.functional
        return {"bernoulli_": lambda: x.bernoulli_(0.9),
                "dropout": lambda: F.dropout(x, 0.1, True)}[op]
    return make


CASES = {
    "cross_entropy 256x1000 fwd+bwd": _cross_entropy,
    "nll_loss(log_softmax) 256x1000 fwd+bwd": _nll,
    "max_pool2d(2) 64x64x24x24 fwd": _pool_fwd("max_pool2d"),
    "max_pool2d(2) 64x64x24x24 fwd+bwd": _pool("max_pool2d"),
    "avg_pool2d(2) 64x64x24x24 fwd": _pool_fwd("avg_pool2d"),
    "avg_pool2d(2) 64x64x24x24 fwd+bwd": _pool("avg_pool2d"),
    "Linear 784->512 bs64 fwd": _linear_fwd,
    "Linear 784->512 bs64 fwd+bwd": _linear_fwd_bwd,
    # Note [Skinny GEMM]: small-batch inference
    "Linear 784->512 bs8 fwd": lambda lib: _linear_fwd(lib, 8),
    "Linear 1024->1024 bs4 fwd": lambda lib: _linear_fwd(lib, 4, (1024, 1024)),
    "LSTM(128,256) B32 T50 fwd": _rnn("LSTM", False),
    "LSTM(128,256) B32 T50 fwd+bwd": _rnn("LSTM"),
    "GRU(128,256) B32 T50 fwd+bwd": _rnn("GRU"),
    "LayerNorm(1024) 256 rows fwd+bwd": _norm("layer"),
    "BatchNorm2d(64) 64x64x16x16 fwd+bwd": _norm("batch"),
    "AdamW step, MLP 784-512-512-10 params": _adamw,
    "conv 64x1x28x28->32 3x3 fwd+bwd": _conv(64, 1, 32, 28, 3),
    "conv 64x32x26x26->64 3x3 fwd+bwd": _conv(64, 32, 64, 26, 3),
    "conv 8x64x56x56->64 3x3 p1 fwd+bwd": _conv(8, 64, 64, 56, 3, pad=1),
    "conv 8x256x56x56->64 1x1 fwd+bwd": _conv(8, 256, 64, 56, 1),
    "conv 8x128x28x28->128 3x3 p1 fwd+bwd": _conv(8, 128, 128, 28, 3, pad=1),
    "conv 8x256x14x14->256 3x3 p1 fwd+bwd": _conv(8, 256, 256, 14, 3, pad=1),
    "conv 8x512x7x7->512 3x3 p1 fwd+bwd": _conv(8, 512, 512, 7, 3, pad=1),
    "conv 8x64x56x56->64 3x3 p1 fwd": _conv(8, 64, 64, 56, 3, pad=1, backward=False),
    "conv 8x64x56x56->128 3x3 s2 p1 fwd+bwd": _conv(8, 64, 128, 56, 3, pad=1, stride=2),
    "conv 8x256x28x28->512 1x1 s2 fwd+bwd": _conv(8, 256, 512, 28, 1, stride=2),
    "conv 8x512x7x7->2048 1x1 fwd+bwd": _conv(8, 512, 2048, 7, 1),
    "resnet18 batch 8 fwd (eval)": _resnet18_fwd,
    "float16 add 1M": _half("add"),
    "float16 x * 2.0 1M": _half("mul scalar"),
    "float16 exp 1M": _half("exp"),
    "float16 gelu 1M": _half("gelu"),
    "float16 .float() 1M": _half("to float32"),
    "float32 .half() 1M": _half("from float32"),
    "sum [1M, 4] dim 1": _short_rows("sum"),
    "amax [1M, 4] dim 1": _short_rows("amax"),
    "max [1M, 4] dim 1 (values, indices)": _short_rows("max"),
    "lerp(a, b, 0.3) 1M f32": _lerp_and_avgpool("number"),
    "lerp(a, b, w) 1M f32": _lerp_and_avgpool("tensor"),
    "a.lerp_(b, 0.1) 1M f32": _lerp_and_avgpool("in place"),
    "lerp(a, b, 0.3) 1M f16": _lerp_and_avgpool("float16"),
    "adaptive_avg_pool2d(1) 8x512x7x7": _lerp_and_avgpool("avgpool"),
    "bernoulli_(0.9) 1024x768": _dropout("bernoulli_"),
    "F.dropout(p=0.1) 1024x768": _dropout("dropout"),
}


def worker(lib_name, threads, names, smoke, clock):
    if lib_name == "torch":
        import torch as lib
        import torch.optim  # noqa: F401
        build = _common.torch_build(lib)
    else:
        import ember as lib
        import ember.nn
        import ember.optim  # noqa: F401
        build = _common.ember_build(lib)
    lib.set_num_threads(threads)
    import time

    from _cases import timeit
    times = {}
    for name in names:
        lib.manual_seed(0)
        fn = CASES[name](lib)
        if smoke:
            t0 = time.perf_counter()
            fn()
            times[name] = time.perf_counter() - t0
        else:
            times[name] = timeit(fn, max_total=2.0,
                                 clock=time.process_time if clock == "process" else time.perf_counter)
        del fn
    print(json.dumps({"build": build, "times": times}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", nargs="*", default=None)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--before", metavar="PYTHONPATH",
                   help="also time the ember on this PYTHONPATH (an earlier build) in each round")
    p.add_argument("--clock", choices=("wall", "process"), default="wall",
                   help="wall-clock time, or the process's CPU time (immune to other users of a "
                        "shared machine; meaningful with --threads 1 only)")
    p.add_argument("--worker", choices=("ember", "torch"), help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        _common.pin_threads(args.threads[0])
        worker(args.worker, args.threads[0], args.names, args.smoke, args.clock)
        return
    names = [n for n in CASES if not args.cases or any(c in n for c in args.cases)]
    if args.smoke:
        args.rounds, args.no_torch = 1, True
    print(_common.load_line() + " (before)")
    for threads in args.threads:
        res = _common.alternate(os.path.abspath(__file__), names, threads, args.rounds,
                                no_torch=args.no_torch,
                                extra=(["--smoke"] if args.smoke else []) + ["--clock", args.clock],
                                baseline_path=args.before)
        if threads == args.threads[0]:
            for lib in res:
                print(f"{lib}: {res[lib]['build']}")
        before = ["before/PyTorch"] if args.before else []
        _common.print_table(
            f"{threads} thread(s), {args.rounds} alternating rounds, medians over rounds, "
            f"{args.clock} clock",
            ["case", "ember", "PyTorch", *before, "ember/PyTorch", "per-round ratio"],
            _common.ratio_rows(res, names))
    print(_common.load_line() + " (after)")


if __name__ == "__main__":
    main()
