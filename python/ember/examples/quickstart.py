"""The Quickstart: train a small network on FashionMNIST, save it, reload it, predict.

    python -m ember.examples.quickstart [--epochs 5] [--device auto] [--root DIR]
                                        [--batch-size 64] [--tensorboard DIR]

The data comes from local IDX files (see ``ember.vision.datasets.FashionMNIST`` for
where it looks); nothing is downloaded.
"""
from __future__ import annotations

import argparse
import time

import ember
from ember import nn
from ember.utils.data import DataLoader, Subset
from ember.vision import datasets
from ember.vision.transforms import ToTensor

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def _progress(iterable, total, desc, enabled):
    if not enabled:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency; stay usable without it
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False, dynamic_ncols=True)


def train(dataloader, model, loss_fn, optimizer, device, *, epoch, writer=None, progress=True):
    model.train()
    bar = _progress(dataloader, len(dataloader), f"epoch {epoch} train", progress)
    running, seen = 0.0, 0
    for batch, (X, y) in enumerate(bar):
        X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        value = loss.item()
        running += value
        seen += 1
        if progress and hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{value:.4f}", refresh=False)  # shown at tqdm's own pace
        if writer is not None and batch % 100 == 99:
            writer.add_scalar("training loss", running / seen,
                              (epoch - 1) * len(dataloader) + batch)
            running, seen = 0.0, 0
    return running / max(seen, 1)


def test(dataloader, model, loss_fn, device, *, epoch, progress=True):
    model.eval()
    size = len(dataloader.dataset)
    test_loss, correct = 0.0, 0
    with ember.no_grad():
        for X, y in _progress(dataloader, len(dataloader), f"epoch {epoch} test", progress):
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).sum().item()
    test_loss /= len(dataloader)
    accuracy = correct / size
    print(f"Epoch {epoch}: test accuracy {100 * accuracy:>5.1f}%, avg loss {test_loss:>8.6f}")
    return accuracy, test_loss


def _device(name):
    if name == "auto":
        return "cuda" if ember.cuda.is_available() else "cpu"
    return name


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.examples.quickstart",
                                description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument("--root", default="data", help="where FashionMNIST's files are looked for")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--tensorboard", metavar="DIR", default=None,
                   help="also log the training loss to TensorBoard event files in DIR")
    p.add_argument("--limit", type=int, default=None,
                   help="use only the first N training and test images (a quick run)")
    p.add_argument("--save", default="model.ember", help="where the trained weights are saved")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)

    device = _device(args.device)
    ember.manual_seed(0)
    training_data = datasets.FashionMNIST(root=args.root, train=True, transform=ToTensor())
    test_data = datasets.FashionMNIST(root=args.root, train=False, transform=ToTensor())
    if args.limit:
        training_data = Subset(training_data, range(min(args.limit, len(training_data))))
        test_data = Subset(test_data, range(min(args.limit, len(test_data))))
    pin = device.startswith("cuda")
    train_dataloader = DataLoader(training_data, batch_size=args.batch_size, shuffle=True,
                                  pin_memory=pin)
    test_dataloader = DataLoader(test_data, batch_size=args.batch_size, pin_memory=pin)
    X, y = next(iter(test_dataloader))
    print(f"Shape of X [N, C, H, W]: {list(X.shape)}")
    print(f"Shape of y: {list(y.shape)} {y.dtype}")
    print(f"Using {device} device")

    model = NeuralNetwork().to(device)
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = ember.optim.SGD(model.parameters(), lr=args.lr)
    writer = None
    if args.tensorboard:
        from ember.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(args.tensorboard)

    progress = not args.no_progress
    start = time.perf_counter()
    for t in range(1, args.epochs + 1):
        train(train_dataloader, model, loss_fn, optimizer, device, epoch=t, writer=writer,
              progress=progress)
        accuracy, test_loss = test(test_dataloader, model, loss_fn, device, epoch=t,
                                   progress=progress)
        if writer is not None:
            writer.add_scalar("test accuracy", accuracy, t)
            writer.add_scalar("test loss", test_loss, t)
    print(f"Done in {time.perf_counter() - start:.1f} s")
    if writer is not None:
        writer.close()

    ember.save(model.state_dict(), args.save)
    print(f"Saved the model's state to {args.save}")
    model = NeuralNetwork().to(device)
    print(model.load_state_dict(ember.load(args.save)))

    model.eval()
    with ember.no_grad():
        for i in range(4):
            x, y = test_data[i]
            pred = model(x.unsqueeze(0).to(device))
            predicted, actual = CLASSES[pred[0].argmax(0).item()], CLASSES[y]
            print(f'Predicted: "{predicted}", Actual: "{actual}"')
    return accuracy


if __name__ == "__main__":
    main()
