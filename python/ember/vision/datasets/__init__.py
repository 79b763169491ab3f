"""Image datasets with torchvision's signatures."""
from .mnist import MNIST, FashionMNIST
from .vision import VisionDataset

__all__ = ["FashionMNIST", "MNIST", "VisionDataset"]
