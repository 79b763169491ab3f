"""Internals of the DataLoader: collation, worker processes, tensor pickling."""
from . import collate, worker  # noqa: F401
