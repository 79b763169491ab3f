"""Named-tuple result types of ops that return several tensors, as
``torch.return_types``: ``values, indices = x.max(0)`` or ``x.max(0).indices``."""
from __future__ import annotations

import collections

__all__ = ["max", "min", "median", "mode", "kthvalue", "sort", "topk", "cummax", "cummin",
           "aminmax", "var_mean", "std_mean", "frexp", "nanmedian", "svd", "qr", "slogdet",
           "linalg_svd", "linalg_qr", "linalg_eigh", "linalg_slogdet", "linalg_inv_ex",
           "linalg_cholesky_ex", "linalg_lstsq", "histogram",
           "linalg_lu_factor", "max_out", "min_out", "kthvalue_out", "sort_out", "topk_out"]


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
frexp = _make("frexp", ["mantissa", "exponent"])
nanmedian = _make("nanmedian", ["values", "indices"])
svd = _make("svd", ["U", "S", "V"])
qr = _make("qr", ["Q", "R"])
slogdet = _make("slogdet", ["sign", "logabsdet"])
linalg_svd = _make("linalg_svd", ["U", "S", "Vh"])
linalg_qr = _make("linalg_qr", ["Q", "R"])
linalg_eigh = _make("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_slogdet = _make("linalg_slogdet", ["sign", "logabsdet"])
linalg_inv_ex = _make("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _make("linalg_cholesky_ex", ["L", "info"])
linalg_lstsq = _make("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
histogram = _make("histogram", ["hist", "bin_edges"])
linalg_lu_factor = _make("linalg_lu_factor", ["LU", "pivots"])

# The out= overloads return their own types, as torch's (torch.sort(x, out=(v, i)) is a
# torch.return_types.sort_out).
max_out = _make("max_out", ["values", "indices"])
min_out = _make("min_out", ["values", "indices"])
kthvalue_out = _make("kthvalue_out", ["values", "indices"])
sort_out = _make("sort_out", ["values", "indices"])
topk_out = _make("topk_out", ["values", "indices"])
