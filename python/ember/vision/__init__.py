"""ember.vision: torchvision's datasets (MNIST, FashionMNIST), transforms and make_grid."""
from . import datasets, transforms, utils  # noqa: F401
