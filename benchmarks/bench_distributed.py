"""ember.distributed vs torch.distributed, both on Gloo over loopback, in one run:

1. all_reduce (float32, SUM) of 1 KiB to 64 MiB on 2 ranks: the time per all-reduce.
2. A DistributedDataParallel training step of the tutorial CNN (batch 64 per rank, SGD) on 2
   ranks, against the same step without DDP in one process: DDP's overhead is the ratio.

    python3 benchmarks/bench_distributed.py [--rounds 3] [--threads 1] [--cases allreduce ddp]

Each round starts fresh worker processes for each library in turn (ember, then PyTorch from
/work/torchvenv/bin/python or TORCH_PYTHON), so the libraries alternate; the table shows the
median over rounds (and the spread, max/min) and ember's time over PyTorch's (below 1: ember is
faster). Every rank runs --threads threads (default 1: two ranks share the machine's cores).
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import PYPI_TORCH_PYTHON, base_parser, fmt_time, print_table  # noqa: E402

SIZES = [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]


def _label(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


# ---- the workers (run as: bench_distributed.py --worker LIB TASK RANK WORLD PORT THREADS) ----

def _lib(name):
    if name == "ember":
        import ember
        import ember.distributed as dist
        import ember.nn as nn
        import ember.nn.functional as F
        from ember.nn.parallel import DistributedDataParallel as DDP
        return ember, dist, nn, F, DDP, ember.optim
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    return torch, dist, nn, F, DDP, torch.optim


def _net(nn, F):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 4 * 4, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 16 * 4 * 4)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
    return Net()


def worker(lib, task, rank, world, port, threads):
    from datetime import timedelta

    T, dist, nn, F, DDP, optim = _lib(lib)
    T.set_num_threads(threads)
    if world > 1 or task == "allreduce":
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, timeout=timedelta(seconds=120))
    out = {}
    if task == "allreduce":
        for n in SIZES:
            t = T.ones(n // 4)
            for _ in range(3):
                dist.all_reduce(t)
            iters = max(3, min(300, (1 << 28) // (n * 8)))
            samples = []
            for _ in range(5):
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    dist.all_reduce(t)
                samples.append((time.perf_counter() - t0) / iters)
            out[_label(n)] = statistics.median(samples)
    else:
        T.manual_seed(0)
        net = _net(nn, F)
        model = DDP(net) if world > 1 else net
        opt = optim.SGD(model.parameters(), lr=0.01)
        x = T.randn(64, 1, 28, 28)
        y = T.randint(0, 10, (64,))

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        for _ in range(5):
            step()
        samples = []
        for _ in range(7):
            if world > 1:
                dist.barrier()
            t0 = time.perf_counter()
            for _ in range(10):
                step()
            samples.append((time.perf_counter() - t0) / 10)
        out["step"] = statistics.median(samples)
    if dist.is_initialized():
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(out), flush=True)


# ---- the driver ----

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(lib, task, world, threads):
    python = sys.executable if lib == "ember" else PYPI_TORCH_PYTHON
    port = _free_port()
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if lib != "ember":
        env["PYTHONPATH"] = ""
    procs = [subprocess.Popen([python, os.path.abspath(__file__), "--worker", lib, task, str(r),
                               str(world), str(port), str(threads)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for r in range(world)]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (_o, e) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{lib} {task} worker failed:\n{e[-3000:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def _stats(vals):
    return statistics.median(vals), max(vals) / min(vals)


def main():
    p = base_parser(__doc__.splitlines()[0], "threads per rank (default 1)")
    p.add_argument("--rounds", type=int, default=3)
    p.set_defaults(threads=1)
    args = p.parse_args()
    cases = args.cases or ["allreduce", "ddp"]
    libs = ["ember"] + ([] if args.no_torch or not os.path.exists(PYPI_TORCH_PYTHON) else ["torch"])
    ver = subprocess.run([PYPI_TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True).stdout.strip() if "torch" in libs else ""
    res = {}
    for _ in range(args.rounds):
        for lib in libs:  # alternate the libraries within each round
            if "allreduce" in cases:
                for k, v in _run(lib, "allreduce", 2, args.threads).items():
                    res.setdefault((lib, "allreduce", k), []).append(v)
            if "ddp" in cases:
                res.setdefault((lib, "ddp", "2 ranks"), []).append(
                    _run(lib, "ddp", 2, args.threads)["step"])
                res.setdefault((lib, "ddp", "1 process"), []).append(
                    _run(lib, "ddp", 1, args.threads)["step"])
    title = (f"ember.distributed vs PyTorch {ver} (gloo, loopback), {args.threads} thread(s) "
             f"per rank, {args.rounds} rounds; spread = max/min over rounds")
    if "allreduce" in cases:
        rows = []
        for n in SIZES:
            k = _label(n)
            e, es = _stats(res[("ember", "allreduce", k)])
            row = [k, fmt_time(e), f"{es:.2f}"]
            if "torch" in libs:
                t, ts = _stats(res[("torch", "allreduce", k)])
                row += [fmt_time(t), f"{ts:.2f}", f"{e / t:.2f}"]
            rows.append(row)
        header = ["all_reduce, 2 ranks", "ember", "spread"] + (
            ["PyTorch", "spread", "ember/PyTorch"] if "torch" in libs else [])
        print_table(title, header, rows)
        print()
    if "ddp" in cases:
        rows = []
        over = {}
        for lib in libs:
            d, ds = _stats(res[(lib, "ddp", "2 ranks")])
            s, ss = _stats(res[(lib, "ddp", "1 process")])
            over[lib] = d / s
            rows.append([lib, fmt_time(s), fmt_time(d), f"{ds:.2f}", f"{d / s:.2f}"])
        if "torch" in libs:
            rows.append(["ember/PyTorch", "", "", "", f"{over['ember'] / over['torch']:.2f}"])
        print_table("DDP step of the tutorial CNN, batch 64 per rank (overhead = DDP step on 2 "
                    "ranks / step in 1 process)",
                    ["library", "1 process", "DDP, 2 ranks", "spread", "overhead"], rows)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, task, rank, world, port, threads = sys.argv[2:8]
        worker(lib, task, int(rank), int(world), int(port), int(threads))
    else:
        main()
