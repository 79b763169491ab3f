"""Named-tuple result types of ops that return several tensors, as
``torch.return_types``: ``values, indices = x.max(0)`` or ``x.max(0).indices``."""
from __future__ import annotations

import collections

__all__ = ["max", "min", "median", "mode", "kthvalue", "sort", "topk", "cummax", "cummin",
           "aminmax", "var_mean", "std_mean"]


def _make(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                               "__module__": "ember.return_types"})
    cls.__qualname__ = name
    return cls


max = _make("max", ["values", "indices"])
min = _make("min", ["values", "indices"])
median = _make("median", ["values", "indices"])
mode = _make("mode", ["values", "indices"])
kthvalue = _make("kthvalue", ["values", "indices"])
sort = _make("sort", ["values", "indices"])
topk = _make("topk", ["values", "indices"])
cummax = _make("cummax", ["values", "indices"])
cummin = _make("cummin", ["values", "indices"])
aminmax = _make("aminmax", ["min", "max"])
var_mean = _make("var_mean", ["var", "mean"])
std_mean = _make("std_mean", ["std", "mean"])
