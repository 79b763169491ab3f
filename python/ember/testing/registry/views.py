"""Registry entries for views and shape helpers (ops/surface_views.cpp, ops/view.cpp)."""
from __future__ import annotations

import itertools

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make

ALL = ("float32", "float64", "int64", "bool")
FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def _one(shape, **kw):
    """samples(): one input of `shape` (contiguous and strided) with the given kwargs."""
    def samples(device, dtype):
        yield _s(make(shape, device, dtype), **kw)
        yield _s(make(shape, device, dtype, noncontig=True, seed=1), desc="noncontig", **kw)
    return samples


def _tuple(f):
    return lambda *a, **k: tuple(f(*a, **k))


def _meshgrid_ref(*xs, indexing="ij"):
    return tuple(np.meshgrid(*xs, indexing=indexing))


def _block_diag_ref(*ms):
    ms = [np.atleast_2d(m) for m in ms]
    r, c = sum(m.shape[0] for m in ms), sum(m.shape[1] for m in ms)
    out = np.zeros((r, c), dtype=np.result_type(*ms))
    i = j = 0
    for m in ms:
        out[i:i + m.shape[0], j:j + m.shape[1]] = m
        i += m.shape[0]
        j += m.shape[1]
    return out


def _diag_embed_ref(a, offset=0, dim1=-2, dim2=-1):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), dtype=a.dtype)
    idx = np.arange(a.shape[-1])
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., r, c] = a
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _unfold_ref(a, dimension, size, step):
    n = (a.shape[dimension] - size) // step + 1
    wins = [np.take(a, np.arange(w * step, w * step + size), axis=dimension) for w in range(n)]
    st = np.stack(wins, axis=dimension)  # window dim at `dimension`, its elements at dimension+1
    return np.moveaxis(st, dimension + 1, -1)


def _tri_ref(lower):
    def ref(row, col, offset=0):
        r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
        return np.stack([r, c]).astype(np.int64)
    return ref


def _combinations_ref(a, r=2, with_replacement=False):
    f = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [list(c) for c in f(a.tolist(), r)]
    return np.array(rows, dtype=a.dtype).reshape(len(rows), r)


def _x(shape, device, dtype, **kw):
    return make(shape, device, dtype, **kw)


ENTRIES = [
    OpEntry("reshape", ember.reshape,
            lambda d, t: [_s(_x((2, 3, 4), d, t), (4, -1)), _s(_x((2, 3, 4), d, t, noncontig=True), (24,))],
            lambda a, s: np.reshape(a, s), dtypes=ALL, aliases=("Tensor.reshape",),
            errors=lambda d: [err(RuntimeError, "invalid for input of size", _x((2, 3), d, ember.float32), (4, 2))]),
    OpEntry("permute", ember.permute, lambda d, t: [_s(_x((2, 3, 4), d, t), (2, 0, 1))],
            lambda a, p: np.transpose(a, p), dtypes=ALL, aliases=("Tensor.permute",)),
    OpEntry("transpose", ember.transpose, lambda d, t: [_s(_x((2, 3, 4), d, t), 0, 2)],
            lambda a, i, j: np.swapaxes(a, i, j), dtypes=ALL,
            aliases=("Tensor.transpose", "swapaxes", "swapdims", "Tensor.swapaxes", "Tensor.swapdims"),
            errors=lambda d: [err(IndexError, "out of range", _x((2, 3), d, ember.float32), 0, 5)]),
    OpEntry("movedim", ember.movedim, lambda d, t: [_s(_x((2, 3, 4), d, t), 0, -1),
                                                    _s(_x((2, 3, 4), d, t), (0, 1), (2, 0))],
            lambda a, s, dd: np.moveaxis(a, s, dd), dtypes=ALL,
            aliases=("moveaxis", "Tensor.movedim", "Tensor.moveaxis")),
    OpEntry("squeeze", ember.squeeze, lambda d, t: [_s(_x((2, 1, 3, 1), d, t)), _s(_x((2, 1, 3, 1), d, t), 1),
                                                    _s(_x((2, 1, 3, 1), d, t), (1, 3))],
            lambda a, dim=None: np.squeeze(a, dim), dtypes=ALL, aliases=("Tensor.squeeze",)),
    OpEntry("unsqueeze", ember.unsqueeze, lambda d, t: [_s(_x((2, 3), d, t), 1), _s(_x((), d, t), -1)],
            lambda a, dim: np.expand_dims(a, dim), dtypes=ALL, aliases=("Tensor.unsqueeze",)),
    OpEntry("flatten", ember.flatten, lambda d, t: [_s(_x((2, 3, 4), d, t)), _s(_x((2, 3, 4), d, t), 1)],
            lambda a, start_dim=0: a.reshape(a.shape[:start_dim] + (-1,)), dtypes=ALL,
            aliases=("Tensor.flatten",)),
    OpEntry("ravel", ember.ravel, _one((3, 4)), np.ravel, dtypes=ALL, aliases=("Tensor.ravel",)),
    OpEntry("t", ember.t, lambda d, t: [_s(_x((3, 4), d, t)), _s(_x((3,), d, t))], np.transpose,
            dtypes=ALL, aliases=("Tensor.t",),
            errors=lambda d: [err(RuntimeError, "<= 2", _x((2, 3, 4), d, ember.float32))]),
    OpEntry("adjoint", ember.adjoint, _one((2, 3, 4)), lambda a: np.swapaxes(a, -1, -2), dtypes=ALL,
            aliases=("Tensor.adjoint", "Tensor.mH", "Tensor.mT")),
    OpEntry("chunk", ember.chunk, lambda d, t: [_s(_x((7, 3), d, t), 3), _s(_x((4, 6), d, t), 2, 1)],
            lambda a, c, dim=0: tuple(np.array_split(a, [3, 6] if c == 3 else [3], axis=dim)),
            dtypes=ALL, aliases=("Tensor.chunk",)),
    OpEntry("split", ember.split, lambda d, t: [_s(_x((7, 3), d, t), 3), _s(_x((7, 3), d, t), [2, 5])],
            lambda a, s: tuple(np.split(a, [3, 6] if s == 3 else [2])),
            dtypes=ALL, aliases=("Tensor.split",)),
    OpEntry("tensor_split", ember.tensor_split,
            lambda d, t: [_s(_x((7, 3), d, t), 3), _s(_x((7, 3), d, t), [1, 5]), _s(_x((3, 7), d, t), [-2, 9], 1),
                          _s(_x((7, 3), d, t), [5, 2])],
            lambda a, s, dim=0: tuple(np.array_split(a, s, axis=dim)), dtypes=ALL,
            aliases=("Tensor.tensor_split",),
            errors=lambda d: [err(RuntimeError, "at least a 1-dimensional", _x((), d, ember.float32), 2),
                              err(RuntimeError, "larger than 0", _x((3,), d, ember.float32), 0)]),
    OpEntry("hsplit", ember.hsplit, lambda d, t: [_s(_x((3, 4), d, t), 2), _s(_x((6,), d, t), [1, 4])],
            lambda a, s: tuple(np.hsplit(a, s)), dtypes=ALL, aliases=("Tensor.hsplit",),
            errors=lambda d: [err(RuntimeError, "not divisible", _x((3, 5), d, ember.float32), 2)]),
    OpEntry("vsplit", ember.vsplit, lambda d, t: [_s(_x((4, 3), d, t), 2), _s(_x((6, 2), d, t), [1, 4])],
            lambda a, s: tuple(np.vsplit(a, s)), dtypes=ALL, aliases=("Tensor.vsplit",),
            errors=lambda d: [err(RuntimeError, "at least 2 dimensions", _x((4,), d, ember.float32), 2)]),
    OpEntry("dsplit", ember.dsplit, lambda d, t: [_s(_x((2, 3, 4), d, t), 2), _s(_x((2, 2, 6), d, t), [1, 4])],
            lambda a, s: tuple(np.dsplit(a, s)), dtypes=ALL, aliases=("Tensor.dsplit",)),
    OpEntry("unbind", ember.unbind, lambda d, t: [_s(_x((3, 2), d, t)), _s(_x((3, 2), d, t), 1)],
            lambda a, dim=0: tuple(np.moveaxis(a, dim, 0)), dtypes=ALL, aliases=("Tensor.unbind",)),
    OpEntry("narrow", ember.narrow, lambda d, t: [_s(_x((5, 4), d, t), 1, 1, 2)],
            lambda a, dim, s, n: np.take(a, range(s, s + n), axis=dim), dtypes=ALL, aliases=("Tensor.narrow",)),
    OpEntry("narrow_copy", ember.narrow_copy, lambda d, t: [_s(_x((5, 4), d, t), 0, 2, 3)],
            lambda a, dim, s, n: np.take(a, range(s, s + n), axis=dim), dtypes=ALL,
            aliases=("Tensor.narrow_copy",)),
    OpEntry("select", ember.select, lambda d, t: [_s(_x((5, 4), d, t), 1, -1)],
            lambda a, dim, i: np.take(a, i, axis=dim), dtypes=ALL, aliases=("Tensor.select",)),
    OpEntry("clone", ember.clone, _one((3, 4)), np.copy, dtypes=ALL, aliases=("Tensor.clone",)),
    OpEntry("as_strided", ember.as_strided, lambda d, t: [_s(_x((3, 4), d, t), (2, 2), (1, 2), 1)],
            lambda a, size, stride, off: np.lib.stride_tricks.as_strided(
                a.ravel()[off:], size, tuple(s * a.itemsize for s in stride)).copy(),
            dtypes=ALL, aliases=("Tensor.as_strided",)),
    OpEntry("diagonal", ember.diagonal, lambda d, t: [_s(_x((3, 4), d, t)), _s(_x((2, 3, 4), d, t), 1, 1, 2)],
            lambda a, offset=0, dim1=0, dim2=1: np.diagonal(a, offset, dim1, dim2), dtypes=ALL,
            aliases=("Tensor.diagonal",)),
    OpEntry("broadcast_to", ember.broadcast_to, lambda d, t: [_s(_x((3, 1), d, t), (2, 3, 4))],
            np.broadcast_to, dtypes=ALL, aliases=("Tensor.broadcast_to",),
            errors=lambda d: [err(RuntimeError, "must match|expanded size", _x((3, 2), d, ember.float32), (3, 4))]),
    OpEntry("broadcast_tensors", ember.broadcast_tensors,
            lambda d, t: [_s(_x((3, 1), d, t), _x((4,), d, t, seed=2))],
            lambda *a: tuple(np.broadcast_arrays(*a)), dtypes=ALL),
    OpEntry("meshgrid", ember.meshgrid,
            lambda d, t: [_s(_x((3,), d, t), _x((2,), d, t, seed=2)),
                          _s(_x((3,), d, t), _x((2,), d, t, seed=2), indexing="xy")],
            _meshgrid_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, "indexing must be one of", _x((3,), d, ember.float32), indexing="q")]),
    OpEntry("atleast_1d", ember.atleast_1d, lambda d, t: [_s(_x((), d, t)), _s(_x((2, 3), d, t))],
            np.atleast_1d, dtypes=ALL, aliases=("atleast_2d", "atleast_3d")),
    OpEntry("atleast_3d", ember.atleast_3d, lambda d, t: [_s(_x((), d, t)), _s(_x((4,), d, t)), _s(_x((2, 3), d, t))],
            np.atleast_3d, dtypes=ALL),
    OpEntry("block_diag", ember.block_diag,
            lambda d, t: [_s(_x((2, 3), d, t), _x((1,), d, t, seed=2), _x((), d, t, seed=3))],
            _block_diag_ref, dtypes=ALL),
    OpEntry("cartesian_prod", ember.cartesian_prod,
            lambda d, t: [_s(_x((3,), d, t), _x((2,), d, t, seed=2))],
            lambda a, b: np.array([[x, y] for x in a for y in b], dtype=np.result_type(a, b)), dtypes=ALL),
    OpEntry("combinations", ember.combinations,
            lambda d, t: [_s(_x((4,), d, t)), _s(_x((3,), d, t), 3, with_replacement=True)],
            _combinations_ref, dtypes=ALL),
    OpEntry("rot90", ember.rot90, lambda d, t: [_s(_x((2, 3), d, t), k) for k in (-1, 0, 1, 2, 3)] +
            [_s(_x((2, 3, 4), d, t), 1, (2, 0))],
            lambda a, k=1, dims=(0, 1): np.rot90(a, k, dims), dtypes=ALL, aliases=("Tensor.rot90",),
            errors=lambda d: [err(RuntimeError, "expected rotation dims", _x((2, 3), d, ember.float32), 1, (0, 0))]),
    OpEntry("tril_indices", ember.tril_indices, lambda d, t: [_s(4, 3), _s(3, 5, 1), _s(3, 3, -1)],
            _tri_ref(True), dtypes=("int64",), grad=False),
    OpEntry("triu_indices", ember.triu_indices, lambda d, t: [_s(4, 3), _s(3, 5, 1), _s(3, 3, -1)],
            _tri_ref(False), dtypes=("int64",), grad=False),
    OpEntry("diag", ember.diag, lambda d, t: [_s(_x((3,), d, t)), _s(_x((3,), d, t), -1), _s(_x((3, 4), d, t), 1)],
            lambda a, k=0: np.diag(a, k), dtypes=ALL, aliases=("Tensor.diag",),
            errors=lambda d: [err(RuntimeError, "1D or 2D", _x((2, 2, 2), d, ember.float32))]),
    OpEntry("diag_embed", ember.diag_embed,
            lambda d, t: [_s(_x((2, 3), d, t)), _s(_x((2, 3), d, t), 1), _s(_x((2, 3), d, t), -1, 0, 2)],
            _diag_embed_ref, dtypes=ALL, aliases=("Tensor.diag_embed",)),
    OpEntry("diagflat", ember.diagflat, lambda d, t: [_s(_x((2, 2), d, t)), _s(_x((3,), d, t), 1)],
            lambda a, offset=0: np.diagflat(a, offset), dtypes=ALL, aliases=("Tensor.diagflat",)),
    OpEntry("vander", ember.vander,
            lambda d, t: [_s(_x((4,), d, t, low=-2, high=2)), _s(_x((3,), d, t, low=-2, high=2), N=5, increasing=True)],
            lambda x, N=None, increasing=False: np.vander(x, N, increasing), dtypes=("float32", "float64", "int64")),
    OpEntry("Tensor.unfold", ember.Tensor.unfold,
            lambda d, t: [_s(_x((7,), d, t), 0, 2, 1), _s(_x((3, 8), d, t), 1, 3, 2), _s(_x((5, 2), d, t), 0, 2, 3)],
            _unfold_ref, dtypes=ALL),
    OpEntry("Tensor.sum_to_size", ember.Tensor.sum_to_size,
            lambda d, t: [_s(_x((2, 3, 4), d, t), (3, 1)), _s(_x((2, 3), d, t), 2, 1)],
            lambda a, *s: a.sum(axis=0) .sum(axis=-1, keepdims=True) if len(a.shape) == 3 else a.sum(1, keepdims=True),
            errors=lambda d: [err(RuntimeError, "not expandable", _x((2, 3), d, ember.float32), (4,))]),
]
