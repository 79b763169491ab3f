"""ember.compile against ember eager, PyTorch eager and torch.compile (Inductor, CPU), in
alternating fresh processes (benchmarks/_common.py). Each case is written once against the
PyTorch API and run with `lib` = ember or torch. Times are medians of the timed calls in each
process, then medians over the rounds; "first call" is the first compiled call in a fresh
process with an empty compile cache (tracing + fusion + C++ compilation for ember,
Dynamo + Inductor for torch).

    python benchmarks/bench_compile.py --threads 1 --rounds 3
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import _median, alternate, base_parser, fmt_time, load_line, pin_threads, print_table  # noqa: E402

CASES = ["ratio_iou", "gelu_mlp", "layernorm_residual_dropout", "chunked_ce", "gpt_block"]


def _cases(lib):
    nn = lib.nn
    F = nn.functional

    def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
        xi = lib.max(x1, x2)
        yi = lib.max(y1, y2)
        wi = lib.clamp(lib.min(x1 + w1, x2 + w2) - xi, min=0)
        hi = lib.clamp(lib.min(y1 + h1, y2 + h2) - yi, min=0)
        area_i = wi * hi
        area_u = w1 * h1 + w2 * h2 - wi * hi
        return area_i / lib.clamp(area_u, min=1e-5)

    def make_ratio_iou():
        xs = [lib.randn(8, 100, 1000).exp() for _ in range(8)]

        def step(f):
            with lib.no_grad():
                f(*xs)
        return ratio_iou, step

    class MLP(nn.Module):
        def __init__(self, d=256, h=1024):
            super().__init__()
            self.fc1 = nn.Linear(d, h)
            self.fc2 = nn.Linear(h, d)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(x)))

    def make_gelu_mlp():
        m = MLP()
        x = lib.randn(512, 256, requires_grad=True)

        def step(f):
            f(x).sum().backward()
        return m, step

    class LNRes(nn.Module):
        def __init__(self, d=768):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.drop = nn.Dropout(0.1)

        def forward(self, x, r):
            return self.drop(self.ln(x + r))

    def make_ln():
        m = LNRes()
        x = lib.randn(1024, 768, requires_grad=True)
        r = lib.randn(1024, 768, requires_grad=True)

        def step(f):
            f(x, r).sum().backward()
        return m, step

    def compute_cross_entropy(logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")

    def make_ce():
        vocab = 32000
        logits = lib.randn(1, 256, vocab).to(lib.bfloat16).requires_grad_()
        labels = lib.randint(0, vocab, (1, 256))

        def step(f):
            chunks = [c.reshape(-1, vocab) for c in logits.chunk(4, dim=1)]
            lab = [t.reshape(-1) for t in labels.chunk(4, dim=1)]
            total = 0.0
            for c, t in zip(chunks, lab):
                total = total + f(c, t)
            (total / 256).backward()
        return compute_cross_entropy, step

    class Block(nn.Module):
        def __init__(self, d=256, heads=4, T=128):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.ln2 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)
            self.heads = heads
            self.register_buffer("mask", lib.tril(lib.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            hd = C // self.heads
            q = q.view(B, T, self.heads, hd).transpose(1, 2)
            k = k.view(B, T, self.heads, hd).transpose(1, 2)
            v = v.view(B, T, self.heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            h = self.fc(self.ln2(x))
            h = 0.5 * h * (1.0 + lib.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))
            return x + self.out(h)

    def make_block():
        m = Block()
        x = lib.randn(8, 128, 256)
        opt = lib.optim.SGD(m.parameters(), lr=1e-3)

        def step(f):
            opt.zero_grad()
            f(x).pow(2).mean().backward()
            opt.step()
        return m, step

    return {"ratio_iou": make_ratio_iou, "gelu_mlp": make_gelu_mlp,
            "layernorm_residual_dropout": make_ln, "chunked_ce": make_ce,
            "gpt_block": make_block}


def _time(step, f, reps):
    for _ in range(2):
        step(f)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step(f)
        ts.append(time.perf_counter() - t0)
    return _median(ts)


def _peak(lib, step, f):
    """Bytes allocated at the peak of one step above what was allocated before it (ember's
    CPU allocator; None for PyTorch, which has no CPU counterpart)."""
    c = getattr(lib, "_C", None)
    if c is None or not hasattr(c, "_cpu_reset_peak_memory_stats"):
        return None
    step(f)
    c._cpu_reset_peak_memory_stats()
    base = c._cpu_allocator_stats()["allocated_bytes"]
    step(f)
    return c._cpu_allocator_stats()["peak_allocated_bytes"] - base


def worker(which, threads, names, reps):
    cache = tempfile.mkdtemp(prefix="bench_compile_")
    if which == "torch":
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        import torch as lib
        lib.set_num_threads(threads)
        build = f"PyTorch {lib.__version__}"
        compile_fn = lib.compile
    else:
        os.environ["EMBER_CACHE_DIR"] = cache
        from _common import ember_build

        import ember as lib
        lib.set_num_threads(threads)
        build = ember_build(lib)
        compile_fn = lib.compile
    import warnings
    warnings.simplefilter("ignore")
    lib.manual_seed(0)
    cases = _cases(lib)
    times = {}
    for name in dict.fromkeys(n.split("/")[0] for n in names):
        fn, step = cases[name]()
        times[f"{name}/eager"] = _time(step, fn, reps)
        cfn = compile_fn(fn)
        t0 = time.perf_counter()
        step(cfn)
        times[f"{name}/first"] = time.perf_counter() - t0
        times[f"{name}/compiled"] = _time(step, cfn, reps)
        for k, f in (("eager", fn), ("compiled", cfn)):
            peak = _peak(lib, step, f)
            if peak is not None:
                times[f"{name}/peak_{k}"] = peak
    print(json.dumps({"build": build, "times": times}))


def main():
    p = base_parser(__doc__)
    p.add_argument("--worker", choices=["ember", "torch"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("names", nargs="*")
    a = p.parse_args()
    if a.worker:
        pin_threads(a.threads)
        worker(a.worker, a.threads, a.names, a.reps)
        return
    names = [c for c in CASES if not a.cases or any(s in c for s in a.cases)]
    keys = [f"{n}/{k}" for n in names
            for k in ("eager", "first", "compiled", "peak_eager", "peak_compiled")]
    res = alternate(os.path.abspath(__file__), keys, a.threads, a.rounds,
                    no_torch=a.no_torch, extra=("--reps", str(a.reps)))
    e = {k: _median(v) for k, v in res["ember"]["times"].items()}
    t = {k: _median(v) for k, v in res.get("torch", {}).get("times", {}).items()}
    print(res["ember"]["build"])
    if "torch" in res:
        print(res["torch"]["build"])
    print(f"threads={a.threads}, rounds={a.rounds}, reps={a.reps}, {load_line()}")
    rows = []
    for n in names:
        ee, ec, ef = e[f"{n}/eager"], e[f"{n}/compiled"], e[f"{n}/first"]
        te, tc, tf = (t.get(f"{n}/{k}") for k in ("eager", "compiled", "first"))
        rows.append([n, fmt_time(ee), fmt_time(ec), f"{ec / ee:.2f}x", fmt_time(te), fmt_time(tc),
                     f"{ec / tc:.2f}x" if tc else "n/a", fmt_time(ef), fmt_time(tf),
                     f"{ef / tf:.2f}x" if tf else "n/a"])
    print_table("ember.compile vs torch.compile (CPU)",
                ["case", "ember eager", "ember compiled", "compiled/eager", "torch eager",
                 "torch.compile", "ember/torch compiled", "ember first call",
                 "torch first call", "first-call ratio"], rows)
    rows = []
    for n in names:
        pe, pc = e.get(f"{n}/peak_eager"), e.get(f"{n}/peak_compiled")
        if pe is not None and pc is not None:
            rows.append([n, f"{pe / 2**20:.2f} MiB", f"{pc / 2**20:.2f} MiB",
                         f"{pc / pe:.2f}x" if pe else "n/a"])
    if rows:
        print_table("ember peak memory of a step, above what was allocated before it",
                    ["case", "eager", "compiled", "compiled/eager"], rows)


if __name__ == "__main__":
    main()
