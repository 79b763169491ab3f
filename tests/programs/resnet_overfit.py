"""Fit torchvision's resnet18 (randomly initialized, 10 classes) to one small batch of images
normalized with torchvision.transforms: the loss must fall as the network memorizes it."""
import argparse
import json

import torch
import torch.nn as nn
import torchvision
from torchvision import transforms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    images = normalize(torch.rand(8, 3, 32, 32))
    labels = torch.arange(8) % 10
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for _ in range(args.steps):
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("RESULT " + json.dumps({"losses": losses}))


if __name__ == "__main__":
    main()
