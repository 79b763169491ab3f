"""Data-parallel training of the tutorial CNN on FashionMNIST with DistributedDataParallel.

Start it through the launcher, which runs one process per worker and sets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT for init_process_group::

    emberrun --standalone --nproc-per-node 2 -m ember.examples.ddp_fashion_mnist --epochs 2
    python -m ember.distributed.run --standalone --nproc-per-node 2 \\
        -m ember.examples.ddp_fashion_mnist

Each process trains on its own shard of every epoch (DistributedSampler, reshuffled with
set_epoch); DDP averages the gradients across processes during backward, so every replica takes
the same optimizer step. Rank 0 evaluates and saves the model. Run without the launcher it
trains as a single process (a group of one).
"""
from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, Subset
from ember.utils.data.distributed import DistributedSampler
from ember.vision import datasets
from ember.vision.transforms import ToTensor


class Net(nn.Module):
    """The CNN of the "Visualizing Models, Data, and Training with TensorBoard" tutorial."""

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
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def evaluate(model, loader):
    model.eval()
    correct, total, loss = 0, 0, 0.0
    with ember.no_grad():
        for x, y in loader:
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += y.numel()
    model.train()
    return correct / max(total, 1), loss / max(total, 1)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.examples.ddp_fashion_mnist",
                                description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32, help="per process")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--root", default="data", help="where FashionMNIST's files are looked for")
    p.add_argument("--limit", type=int, default=None,
                   help="use only the first N training and test images (a quick run)")
    p.add_argument("--save", default=None, help="rank 0 saves the weights here")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before a hung or dead peer makes the others fail")
    args = p.parse_args(argv)

    launched = "RANK" in os.environ
    if launched:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()

    ember.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    train_data = datasets.FashionMNIST(root=args.root, train=True, transform=ToTensor())
    test_data = datasets.FashionMNIST(root=args.root, train=False, transform=ToTensor())
    if args.limit:
        train_data = Subset(train_data, range(min(args.limit, len(train_data))))
        test_data = Subset(test_data, range(min(args.limit, len(test_data))))
    sampler = DistributedSampler(train_data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    train_loader = DataLoader(train_data, batch_size=args.batch_size, sampler=sampler)
    test_loader = DataLoader(test_data, batch_size=256)

    model = DDP(Net())
    optimizer = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if rank == 0:
        print(f"world size {world}: {len(sampler)} of {len(train_data)} images per process "
              f"per epoch, batch {args.batch_size} per process", flush=True)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every process
        total, steps = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # gradients are averaged across processes here
            optimizer.step()
            total += loss.item()
            steps += 1
        mean_loss = ember.tensor([total / max(steps, 1)])
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        if rank == 0:
            acc, test_loss = evaluate(model.module, test_loader)
            print(f"epoch {epoch}: train loss {mean_loss.item():.4f}, test accuracy "
                  f"{100 * acc:.1f}%, test loss {test_loss:.4f}", flush=True)
    # every replica holds the same weights
    check = ember.cat([q.detach().flatten() for q in model.parameters()]).sum().reshape(1)
    spread = check.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    same = spread.item() == check.item()
    if rank == 0:
        print(f"done in {time.perf_counter() - start:.1f} s; replicas identical: {same}",
              flush=True)
        if args.save:
            ember.save(model.module.state_dict(), args.save)
    dist.destroy_process_group()
    return same


if __name__ == "__main__":
    main()
