"""Train an MLP classifier on a synthetic dataset: an argparse script in the style of PyTorch's
examples (torch.accelerator device selection, legacy typed constructors, a DataLoader with
worker processes and a sampler drawing with replacement, SGD with momentum and a StepLR)."""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset, RandomSampler


class Blobs(Dataset):
    """Four overlapping Gaussian blobs in 8 dimensions (the same centers for every split),
    built with the legacy typed constructors."""

    def __init__(self, n, seed):
        centers = np.random.default_rng(0).normal(0.0, 1.0, size=(4, 8)).astype(np.float32)
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, 4, size=n)
        points = centers[labels] + rng.normal(0.0, 1.0, size=(n, 8)).astype(np.float32)
        self.x = torch.FloatTensor(points)
        self.y = torch.LongTensor(labels.tolist())
        assert isinstance(self.x, torch.FloatTensor) and self.x.type() == "torch.FloatTensor"
        assert isinstance(self.y, torch.LongTensor) and not isinstance(self.y, torch.FloatTensor)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 4)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.dropout(F.relu(self.fc2(x)))
        return F.log_softmax(self.fc3(x), dim=1)


def train(model, device, loader, optimizer):
    model.train()
    total, count = 0.0, 0
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(target)
        count += len(target)
    return total / count


def test(model, device, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            pred = model(data).argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="MLP on Gaussian blobs")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-accel", action="store_true", help="disables the accelerator")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")

    train_set, test_set = Blobs(1024, seed=1), Blobs(512, seed=2)
    sampler = RandomSampler(train_set, replacement=True, num_samples=len(train_set))
    loader_kwargs = {"num_workers": args.workers, "pin_memory": use_accel}
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler,
                              **loader_kwargs)
    test_loader = DataLoader(test_set, batch_size=256, **loader_kwargs)

    model = Net().to(device)
    probe = next(model.parameters())
    assert not (probe.is_xpu or probe.is_mps) and probe.is_cuda == (device.type == "cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses, accuracies = [], []
    for _ in range(args.epochs):
        losses.append(train(model, device, train_loader, optimizer))
        accuracies.append(test(model, device, test_loader))
        scheduler.step()
    print("RESULT " + json.dumps({"losses": losses, "accuracy": accuracies}))


if __name__ == "__main__":
    main()
