"""default_collate and default_convert: turning a list of samples into a batch.

Tensors are stacked (in a worker process, straight into shared memory so the batch
crosses to the main process without a copy); Python numbers and NumPy arrays become
tensors; containers (dicts, namedtuples, dataclasses, lists, tuples) are collated
field by field; strings and bytes pass through as lists.
"""
import collections.abc
import dataclasses

import numpy as np

import ember

__all__ = ["default_collate", "default_convert"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts, "
        "dataclasses or lists; found {}")
_NP_STR = ("S", "a", "U", "O")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _stack(batch):
    from . import worker
    if worker.get_worker_info() is not None:
        # In a worker: stack into shared memory, so that pickling the batch passes an fd.
        return ember._C._data_stack(list(batch), True)
    return ember._C._data_stack(list(batch), False)


def default_convert(data):
    """Converts NumPy arrays and scalars to tensors inside any container; leaves the rest."""
    if isinstance(data, ember.Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if data.dtype.kind in _NP_STR:
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            out = type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            out = {k: default_convert(v) for k, v in data.items()}
        return out
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return type(data)(**{f.name: default_convert(getattr(data, f.name))
                             for f in dataclasses.fields(data) if f.init})
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Collates a list of samples into a batch (see the module docstring)."""
    elem = batch[0]
    if isinstance(elem, ember.Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in _NP_STR:
            raise TypeError(_ERR.format(elem.dtype))
        return _stack([ember.as_tensor(b) for b in batch])
    if isinstance(elem, np.generic):
        if elem.dtype.kind in _NP_STR:
            raise TypeError(_ERR.format(elem.dtype))
        return ember.as_tensor(np.stack(batch))
    if isinstance(elem, bool):
        return ember.tensor(list(batch))
    if isinstance(elem, float):
        return ember.tensor(list(batch), dtype=ember.float64)
    if isinstance(elem, int):
        return ember.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {k: default_collate([d[k] for d in batch]) for k in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if dataclasses.is_dataclass(elem) and not isinstance(elem, type):
        names = [f.name for f in dataclasses.fields(elem) if f.init]
        return type(elem)(**{n: default_collate([getattr(d, n) for d in batch]) for n in names})
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))  # tuples: a column of strings comes back a tuple, as torch
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]  # a list, as torch
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))
