"""DataLoader throughput, ember vs PyTorch (time per batch, median of repeats).

Cases:
  tensordataset_b64_shuffle   DataLoader(TensorDataset(60000×1×28×28 float32, int64 labels),
                              batch_size=64, shuffle=True): a whole epoch, per batch.
  dataset_totensor_w0 / _w2   a FashionMNIST-shaped uint8 dataset whose samples go through
                              ToTensor (PIL image -> float CHW), batch 64, 0 or 2 workers;
                              200 batches after 5 warm-up batches. torchvision is not
                              installed beside PyTorch, so its side is the same dataset written
                              the way torchvision's FashionMNIST + ToTensor do it.

PyTorch runs in a subprocess under /work/torchvenv/bin/python when it exists (else the
system python3 with Debian's torch); threads are pinned equal on both sides.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import base_parser, fmt_time, pin_threads, print_table  # noqa: E402

TORCH_VENV = "/work/torchvenv/bin/python"
N, BATCH, STEPS, WARM = 60000, 64, 200, 5


def time_epoch(loader, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = 0
        for _ in loader:
            n += 1
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out)


def time_steps(make_loader, repeats):
    out = []
    for _ in range(repeats):
        it = iter(make_loader())
        for _ in range(WARM):
            next(it)
        t0 = time.perf_counter()
        for _ in range(STEPS):
            next(it)
        out.append((time.perf_counter() - t0) / STEPS)
        del it
    return statistics.median(out)


def images_u8():
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(N, 28, 28), dtype=np.uint8), rng.integers(0, 10, size=N)


def run_ember(cases, repeats):
    import numpy as np

    import ember
    from ember.utils.data import DataLoader, TensorDataset
    from ember.vision import transforms
    from ember.vision.datasets import FashionMNIST
    times = {}
    if "tensordataset_b64_shuffle" in cases:
        x = ember.randn(N, 1, 28, 28)
        y = ember.randint(0, 10, (N,))
        dl = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)
        time_epoch(dl, 1)
        times["tensordataset_b64_shuffle"] = time_epoch(dl, repeats)
    imgs, labels = images_u8()

    class Data(FashionMNIST):
        def __init__(self, transform):  # the real class, with in-memory arrays instead of files
            self.root, self.train, self.transform, self.target_transform = "", True, transform, None
            self.data = ember.from_numpy(imgs)
            self.targets = ember.from_numpy(labels.astype(np.int64))
    ds = Data(transforms.ToTensor())
    for w in (0, 2):
        name = f"dataset_totensor_w{w}"
        if name in cases:
            times[name] = time_steps(lambda w=w: DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=w), repeats)
    return times


def run_torch(cases, repeats):
    import numpy as np
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset, TensorDataset
    times = {}
    if "tensordataset_b64_shuffle" in cases:
        x = torch.randn(N, 1, 28, 28)
        y = torch.randint(0, 10, (N,))
        dl = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)
        time_epoch(dl, 1)
        times["tensordataset_b64_shuffle"] = time_epoch(dl, repeats)
    imgs, labels = images_u8()

    class Data(Dataset):  # torchvision.datasets.FashionMNIST.__getitem__ + transforms.ToTensor
        def __init__(self):
            self.data = torch.from_numpy(imgs)
            self.targets = torch.from_numpy(labels.astype(np.int64))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            img, target = self.data[i], int(self.targets[i])
            img = Image.fromarray(img.numpy(), mode="L")
            t = torch.from_numpy(np.array(img, np.uint8, copy=True)).view(28, 28, 1).permute(2, 0, 1).contiguous()
            return t.to(torch.get_default_dtype()).div(255), target
    ds = Data()
    for w in (0, 2):
        name = f"dataset_totensor_w{w}"
        if name in cases:
            times[name] = time_steps(lambda w=w: DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=w), repeats)
    return times, torch.__version__


ALL = ["tensordataset_b64_shuffle", "dataset_totensor_w0", "dataset_totensor_w2"]


def main():
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--torch-worker", action="store_true", help=argparse_hidden())
    args = p.parse_args()
    pin_threads(args.threads)
    cases = [c for c in ALL if not args.cases or any(s in c for s in args.cases)]
    if args.torch_worker:
        import torch
        torch.set_num_threads(args.threads)
        times, version = run_torch(cases, args.repeats)
        print(json.dumps({"version": version, "times": times}))
        return
    import _common

    import ember
    ember.set_num_threads(args.threads)
    print(_common.ember_build(ember))  # which ember this run times
    ours = run_ember(cases, args.repeats)
    theirs, version = {}, None
    py = TORCH_VENV if os.path.exists(TORCH_VENV) else "/usr/bin/python3"
    if not args.no_torch and os.path.exists(py):
        cmd = [py, os.path.abspath(__file__), "--torch-worker", "--threads", str(args.threads),
               "--repeats", str(args.repeats), "--cases", *cases]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
        if r.returncode == 0:
            res = json.loads(r.stdout.strip().splitlines()[-1])
            theirs, version = res["times"], res["version"]
        else:
            print(f"PyTorch worker failed:\n{r.stderr[-2000:]}", file=sys.stderr)
    rows = []
    for c in cases:
        t, tt = ours.get(c), theirs.get(c)
        ratio = f"{t / tt:.2f}x" if t and tt else "n/a"
        rows.append([c, fmt_time(t), fmt_time(tt), ratio])
    print_table(f"DataLoader per batch ({args.threads} threads; PyTorch {version or 'not run'})",
                ["case", "ember", "torch", "ember/torch"], rows)


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
