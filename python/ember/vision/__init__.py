"""ember.vision: torchvision's datasets (MNIST, FashionMNIST), transforms, make_grid, the
model zoo (``models``, randomly initialized) and the layer blocks it uses (``ops``)."""
from . import datasets, models, ops, transforms, utils  # noqa: F401
