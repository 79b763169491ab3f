"""The Quickstart's epoch, ember vs PyTorch: one training pass over FashionMNIST plus the test
pass, exactly as the tutorial writes them.

    python3 benchmarks/bench_quickstart.py [--threads N] [--repeats 3] [--limit N] [--root DIR]

Both sides read the real IDX files (Debian's dataset-fashion-mnist, or --root) through a
FashionMNIST dataset with ToTensor, DataLoader(batch_size=64, shuffle=True), the
Flatten -> Linear(784, 512) -> ReLU -> Linear(512, 512) -> ReLU -> Linear(512, 10) model,
CrossEntropyLoss and SGD(lr=1e-3), no progress bars. ember runs its own
``ember.examples.quickstart`` train/test functions and its vision dataset. torchvision is not
installed beside PyTorch, so its dataset is torchvision's FashionMNIST.__getitem__ written out
(uint8 tensor -> PIL image -> ToTensor). Each side does one warm-up epoch on --limit images,
then --repeats full epochs; the table shows the median epoch time and ember's time over
PyTorch's (below 1: ember is faster). PyTorch runs in a subprocess under
/work/torchvenv/bin/python (else Debian's /usr/bin/python3) with the same thread count.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import base_parser, fmt_time, pin_threads, print_table  # noqa: E402

TORCH_VENV = "/work/torchvenv/bin/python"


def _median_epoch(run_epoch, warm_limit, repeats):
    run_epoch(warm_limit)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_epoch(None)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_ember(root, repeats, warm_limit):
    import ember
    from ember import nn
    from ember.examples import quickstart as qs
    from ember.utils.data import DataLoader, Subset
    from ember.vision import datasets
    from ember.vision.transforms import ToTensor

    ember.manual_seed(0)
    train_data = datasets.FashionMNIST(root=root, train=True, transform=ToTensor())
    test_data = datasets.FashionMNIST(root=root, train=False, transform=ToTensor())
    model = qs.NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    opt = ember.optim.SGD(model.parameters(), lr=1e-3)

    def epoch(limit):
        tr = Subset(train_data, range(limit)) if limit else train_data
        te = Subset(test_data, range(limit)) if limit else test_data
        qs.train(DataLoader(tr, batch_size=64, shuffle=True), model, loss_fn, opt, "cpu",
                 epoch=1, progress=False)
        return qs.test(DataLoader(te, batch_size=64), model, loss_fn, "cpu", epoch=1,
                       progress=False)
    return _median_epoch(epoch, warm_limit, repeats)


def _find_files(root):
    import glob
    for d in (os.path.join(root, "FashionMNIST", "raw"), root, "/usr/share/datasets/fashion-mnist"):
        if glob.glob(os.path.join(d, "train-images-idx3-ubyte*")):
            return d
    raise SystemExit(f"FashionMNIST files not found under {root!r} or Debian's location")


def run_torch(root, repeats, warm_limit):
    import gzip

    import numpy as np
    import torch
    from PIL import Image
    from torch import nn
    from torch.utils.data import DataLoader, Dataset, Subset

    d = _find_files(root)

    def idx(name, offset):
        path = os.path.join(d, name)
        opener = gzip.open if os.path.exists(path + ".gz") else open
        with opener(path + (".gz" if os.path.exists(path + ".gz") else ""), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    class FashionMNIST(Dataset):  # torchvision's __getitem__ with transforms.ToTensor
        def __init__(self, train):
            p = "train" if train else "t10k"
            self.data = torch.from_numpy(idx(f"{p}-images-idx3-ubyte", 16).reshape(-1, 28, 28).copy())
            self.targets = torch.from_numpy(idx(f"{p}-labels-idx1-ubyte", 8).astype(np.int64))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            img, target = self.data[i], int(self.targets[i])
            img = Image.fromarray(img.numpy(), mode="L")
            t = torch.from_numpy(np.array(img, np.uint8, copy=True)).view(28, 28, 1)
            return t.permute(2, 0, 1).contiguous().to(torch.get_default_dtype()).div(255), target

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                nn.Linear(512, 10))

        def forward(self, x):
            return self.linear_relu_stack(self.flatten(x))

    torch.manual_seed(0)
    train_data, test_data = FashionMNIST(True), FashionMNIST(False)
    model = NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def epoch(limit):  # the tutorial's train_loop and test_loop
        tr = Subset(train_data, range(limit)) if limit else train_data
        te = Subset(test_data, range(limit)) if limit else test_data
        model.train()
        for X, y in DataLoader(tr, batch_size=64, shuffle=True):
            loss = loss_fn(model(X), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            loss.item()
        model.eval()
        correct, total = 0, 0.0
        with torch.no_grad():
            for X, y in DataLoader(te, batch_size=64):
                pred = model(X)
                total += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        return correct
    return _median_epoch(epoch, warm_limit, repeats), torch.__version__


def main():
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--limit", type=int, default=2000, help="images in the warm-up epoch")
    p.add_argument("--root", default="data")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    pin_threads(args.threads)
    if args.torch_worker:
        import torch
        torch.set_num_threads(args.threads)
        t, version = run_torch(args.root, args.repeats, args.limit)
        print(json.dumps({"version": version, "time": t}))
        return
    import contextlib
    import io

    import _common

    import ember
    ember.set_num_threads(args.threads)
    print(_common.ember_build(ember))  # which ember this run times
    with contextlib.redirect_stdout(io.StringIO()):  # the test loop prints its accuracy
        ours = run_ember(args.root, args.repeats, args.limit)
    theirs, version = None, None
    py = TORCH_VENV if os.path.exists(TORCH_VENV) else "/usr/bin/python3"
    if not args.no_torch and os.path.exists(py):
        cmd = [py, os.path.abspath(__file__), "--torch-worker", "--threads", str(args.threads),
               "--repeats", str(args.repeats), "--limit", str(args.limit), "--root", args.root]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
        if r.returncode == 0:
            res = json.loads(r.stdout.strip().splitlines()[-1])
            theirs, version = res["time"], res["version"]
        else:
            print(f"PyTorch worker failed:\n{r.stderr[-2000:]}", file=sys.stderr)
    ratio = f"{ours / theirs:.2f}x" if theirs else "n/a"
    print_table(f"Quickstart epoch: train 60000 + test 10000 images ({args.threads} threads; "
                f"PyTorch {version or 'not run'})", ["case", "ember", "torch", "ember/torch"],
                [["quickstart epoch", fmt_time(ours), fmt_time(theirs), ratio]])


if __name__ == "__main__":
    main()
