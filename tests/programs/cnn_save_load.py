"""Train a small CNN, save the whole model with torch.save, load it back with torch.load under
torch.serialization.safe_globals (weights-only unpickling with the model's classes allowed),
check it computes the same outputs, and keep training the loaded copy."""
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, 3)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def make_data(n, generator):
    """Three classes of 12x12 images: a bright top half, a bright left half, or noise."""
    x = torch.randn(n, 1, 12, 12, generator=generator) * 0.5
    y = torch.randint(0, 3, (n,), generator=generator)
    x[y == 0, :, :6, :] += 1.5
    x[y == 1, :, :, :6] += 1.5
    return x, y


def epoch(model, optimizer, x, y, bs=32):
    model.train()
    total = 0.0
    for i in range(0, len(x), bs):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x[i: i + bs]), y[i: i + bs])
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y[i: i + bs])
    return total / len(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    x, y = make_data(384, g)
    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = [epoch(model, optimizer, x, y) for _ in range(args.epochs)]

    path = os.path.join(tempfile.mkdtemp(), "model.pt")
    torch.save(model, path)
    allowed = [SmallCNN, nn.Sequential, nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d,
               nn.AdaptiveAvgPool2d, nn.Linear]
    with torch.serialization.safe_globals(allowed):
        loaded = torch.load(path, weights_only=True)
    assert type(loaded) is SmallCNN
    model.eval()
    loaded.eval()
    with torch.no_grad():
        same = torch.equal(model(x[:16]), loaded(x[:16]))
    optimizer = torch.optim.Adam(loaded.parameters(), lr=1e-2)
    losses += [epoch(loaded, optimizer, x, y) for _ in range(args.epochs)]
    print("RESULT " + json.dumps({"losses": losses, "same_output": bool(same)}))


if __name__ == "__main__":
    main()
