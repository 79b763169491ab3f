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
            aliases=("Tensor.transpose", "swapaxes", "swapdims", "Tensor.swapaxes", "Tensor.swapdims",
                     "Tensor.transpose_", "Tensor.swapdims_", "Tensor.swapaxes_"),
            errors=lambda d: [err(IndexError, "out of range", _x((2, 3), d, ember.float32), 0, 5)]),
    OpEntry("movedim", ember.movedim, lambda d, t: [_s(_x((2, 3, 4), d, t), 0, -1),
                                                    _s(_x((2, 3, 4), d, t), (0, 1), (2, 0))],
            lambda a, s, dd: np.moveaxis(a, s, dd), dtypes=ALL,
            aliases=("moveaxis", "Tensor.movedim", "Tensor.moveaxis")),
    OpEntry("squeeze", ember.squeeze, lambda d, t: [_s(_x((2, 1, 3, 1), d, t)), _s(_x((2, 1, 3, 1), d, t), 1),
                                                    _s(_x((2, 1, 3, 1), d, t), (1, 3))],
            lambda a, dim=None: np.squeeze(a, dim), dtypes=ALL, aliases=("Tensor.squeeze", "Tensor.squeeze_")),
    OpEntry("unsqueeze", ember.unsqueeze, lambda d, t: [_s(_x((2, 3), d, t), 1), _s(_x((), d, t), -1)],
            lambda a, dim: np.expand_dims(a, dim), dtypes=ALL, aliases=("Tensor.unsqueeze", "Tensor.unsqueeze_")),
    OpEntry("flatten", ember.flatten, lambda d, t: [_s(_x((2, 3, 4), d, t)), _s(_x((2, 3, 4), d, t), 1)],
            lambda a, start_dim=0: a.reshape(a.shape[:start_dim] + (-1,)), dtypes=ALL,
            aliases=("Tensor.flatten",)),
    OpEntry("ravel", ember.ravel, _one((3, 4)), np.ravel, dtypes=ALL, aliases=("Tensor.ravel",)),
    OpEntry("t", ember.t, lambda d, t: [_s(_x((3, 4), d, t)), _s(_x((3,), d, t))], np.transpose,
            dtypes=ALL, aliases=("Tensor.t", "Tensor.t_"),
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


# --- Tensor view methods, flips, rolls, repeats, triangles (issue 6: moved out of _exempt.py
# so they get registry gradcheck) ---

def _m(name):
    """The Tensor method ``name`` as a function of the tensor and its arguments."""
    def op(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs)
    op.__name__ = name
    return op


def _ishape(shape, d):
    """An int64 tensor of ``shape``: a shape-only argument that gradcheck leaves alone."""
    return ember.zeros(*shape, dtype=ember.int64, device=d) if shape else ember.tensor(0, device=d)


def _view_samples(d, t):
    yield _s(make((2, 3, 4), d, t), 6, 4)
    yield _s(make((2, 3, 4), d, t), (-1,), desc="infer, tuple")
    yield _s(make((2, 3, 4), d, t), 3, -1, 2, desc="infer middle")
    yield _s(make((3, 4), d, t, noncontig=True), 3, 2, 2, desc="split a strided dim")
    yield _s(make((), d, t), 1, desc="0-d to 1")
    yield _s(make((1,), d, t), (), desc="to 0-d")
    yield _s(make((0, 3), d, t), 3, 0, desc="empty")


def _view_ref(a, *shape):
    if len(shape) == 1 and isinstance(shape[0], tuple):
        shape = shape[0]
    return a.reshape(shape)


def _view_as_samples(d, t):
    yield _s(make((2, 3, 4), d, t), _ishape((6, 4), d))
    yield _s(make((3, 4), d, t, noncontig=True), _ishape((3, 2, 2), d), desc="strided")
    yield _s(make((), d, t), _ishape((1, 1), d), desc="0-d")
    yield _s(make((0, 3), d, t), _ishape((3, 0), d), desc="empty")


def _reshape_as_samples(d, t):
    yield from _view_as_samples(d, t)
    yield _s(make((3, 4), d, t).t(), _ishape((12,), d), desc="transposed: copies")


def _expand_samples(d, t):
    yield _s(make((3, 1), d, t), 3, 4)
    yield _s(make((3, 1), d, t), (2, 3, 4), desc="new leading dim, tuple")
    yield _s(make((3, 1), d, t), -1, 5, desc="-1 keeps")
    yield _s(make((), d, t), 2, 3, desc="0-d")
    yield _s(make((1, 4), d, t, noncontig=True), 3, 4, desc="strided")
    yield _s(make((1, 0), d, t), 5, 0, desc="empty")
    yield _s(make((3, 4), d, t), 3, 4, desc="same shape")


def _expand_ref(a, *shape):
    if len(shape) == 1 and isinstance(shape[0], tuple):
        shape = shape[0]
    lead = len(shape) - a.ndim
    full = tuple(a.shape[i - lead] if (s == -1) else s for i, s in enumerate(shape))
    return np.broadcast_to(a, full).copy()


def _expand_as_samples(d, t):
    yield _s(make((3, 1), d, t), _ishape((3, 4), d))
    yield _s(make((3, 1), d, t), _ishape((2, 3, 4), d), desc="new leading dim")
    yield _s(make((), d, t), _ishape((2, 3), d), desc="0-d")
    yield _s(make((1, 0), d, t), _ishape((5, 0), d), desc="empty")


def _unflatten_samples(d, t):
    yield _s(make((2, 6), d, t), 1, (2, 3))
    yield _s(make((2, 6), d, t), -1, (-1, 3), desc="infer, neg dim")
    yield _s(make((6, 2), d, t, noncontig=True), 0, (3, 2), desc="strided")
    yield _s(make((6,), d, t), 0, (1, 6, 1), desc="unit dims")
    yield _s(make((0, 6), d, t), 1, (2, 3), desc="empty")


def _unflatten_ref(a, dim, sizes):
    dim = dim % a.ndim
    n = a.shape[dim]
    sizes = list(sizes)
    if -1 in sizes:
        k = sizes.index(-1)
        sizes[k] = n // int(np.prod([s for s in sizes if s != -1]))
    return a.reshape(a.shape[:dim] + tuple(sizes) + a.shape[dim + 1:])


def _flip_samples(d, t):
    yield _s(make((3, 4), d, t), (0,))
    yield _s(make((3, 4), d, t), (0, 1), desc="both")
    yield _s(make((2, 3, 4), d, t, noncontig=True), (-1, 0), desc="strided neg dim")
    yield _s(make((2, 3, 4), d, t), [1], desc="list")
    yield _s(make((), d, t), (), desc="0-d")
    yield _s(make((0, 3), d, t), (0, 1), desc="empty")


def _fliplr_samples(d, t):
    yield _s(make((3, 4), d, t))
    yield _s(make((2, 3, 4), d, t, noncontig=True), desc="3-d strided")
    yield _s(make((3, 0), d, t), desc="empty")


def _flipud_samples(d, t):
    yield from _fliplr_samples(d, t)
    yield _s(make((5,), d, t), desc="1-d")


def _roll_samples(d, t):
    yield _s(make((3, 4), d, t), 1, desc="flattened")
    yield _s(make((3, 4), d, t), -5, 1, desc="negative shift, one dim")
    yield _s(make((3, 4), d, t), (1, 7), (0, 1), desc="two dims, shift > size")
    yield _s(make((2, 3, 4), d, t, noncontig=True), 2, -1, desc="strided")
    yield _s(make((), d, t), 1, desc="0-d")
    yield _s(make((0, 3), d, t), 1, 1, desc="empty")


def _roll_ref(a, shifts, dims=None):
    if a.ndim == 0:
        return a.copy()
    return np.roll(a, shifts, axis=dims)


def _repeat_samples(d, t):
    yield _s(make((2, 3), d, t), 2, 1)
    yield _s(make((2, 3), d, t), (1, 2, 3), desc="more dims, tuple")
    yield _s(make((2, 3), d, t, noncontig=True), 2, 2, desc="strided")
    yield _s(make((), d, t), 3, desc="0-d")
    yield _s(make((2, 3), d, t), 0, 2, desc="zero repeat")


def _repeat_ref(a, *reps):
    if len(reps) == 1 and isinstance(reps[0], tuple):
        reps = reps[0]
    return np.tile(a, reps)


def _tile_samples(d, t):
    yield _s(make((2, 3), d, t), (2, 1))
    yield _s(make((2, 3), d, t), (2,), desc="fewer dims than input")
    yield _s(make((2, 3), d, t, noncontig=True), (1, 2, 2), desc="more dims, strided")
    yield _s(make((), d, t), (3,), desc="0-d")
    yield _s(make((0, 3), d, t), (2, 2), desc="empty")


def _ri_samples(d, t):
    yield _s(make((2, 3), d, t), 2, desc="int, flattened")
    yield _s(make((2, 3), d, t), 3, 1, desc="int, dim")
    yield _s(make((2, 3), d, t), ember.tensor([1, 0, 2], device=d), dim=1, desc="tensor repeats")
    yield _s(make((3, 2), d, t, noncontig=True), ember.tensor([2, 1, 3], device=d), 0, desc="strided")
    yield _s(make((), d, t), 3, desc="0-d")
    yield _s(make((0, 3), d, t), 2, 0, desc="empty")
    if t == ember.int64:
        yield _s(ember.tensor([1, 0, 2], device=d), desc="repeats-only form")


def _ri_ref(a, repeats=None, dim=None, **kw):
    if repeats is None:
        return np.repeat(np.arange(a.shape[0]), a).astype(np.int64)
    return np.repeat(a, repeats, axis=dim)


def _tri_samples(d, t):
    yield _s(make((4, 4), d, t))
    yield _s(make((3, 5), d, t), 1, desc="wide, k=1")
    yield _s(make((5, 3), d, t), -2, desc="tall, k=-2")
    yield _s(make((2, 3, 4), d, t, noncontig=True), 0, desc="batched strided")
    yield _s(make((3, 4), d, t), 10, desc="k past the edge")
    yield _s(make((0, 3), d, t), desc="empty")


def _o(d):
    return lambda *shape, **kw: ember.ones(*shape, device=d, **kw)


ENTRIES += [
    OpEntry("Tensor.view", _m("view"), _view_samples, _view_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"shape '\[4\]' is invalid for input of size 6", _o(d)(2, 3), 4),
                              err(RuntimeError, "view size is not compatible with input tensor's size and stride",
                                  _o(d)(2, 3).t(), 6),
                              err(RuntimeError, "only one dimension can be inferred", _o(d)(2, 3), -1, -1)]),
    OpEntry("Tensor.view_as", _m("view_as"), _view_as_samples, lambda a, o: a.reshape(o.shape), dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"shape '\[4\]' is invalid for input of size 6", _o(d)(2, 3), _o(d)(4))]),
    OpEntry("Tensor.reshape_as", _m("reshape_as"), _reshape_as_samples, lambda a, o: a.reshape(o.shape),
            dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"shape '\[4\]' is invalid for input of size 6", _o(d)(2, 3), _o(d)(4))]),
    OpEntry("Tensor.expand", _m("expand"), _expand_samples, _expand_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"expanded size of the tensor \(3\) must match the existing size \(2\) "
                                  "at non-singleton dimension 0", _o(d)(2, 3), 3, 3),
                              err(RuntimeError, r"the number of sizes provided \(1\) must be greater or equal to the "
                                  r"number of dimensions in the tensor \(2\)", _o(d)(2, 3), 3)]),
    OpEntry("Tensor.expand_as", _m("expand_as"), _expand_as_samples,
            lambda a, o: np.broadcast_to(a, o.shape).copy(), dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"expanded size of the tensor \(3\) must match the existing size \(2\)",
                                  _o(d)(2, 3), _o(d)(3, 3))]),
    OpEntry("Tensor.unflatten", _m("unflatten"), _unflatten_samples, _unflatten_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, "unflatten: sizes must be non-empty", _o(d)(2, 6), 1, ())],
            note="sizes that do not multiply up to the dim raise RuntimeError \"shape '[4, 2]' is invalid for input "
                 "of size 6\" where PyTorch says \"unflatten: Provided sizes [4, 2] don't multiply up to the size of "
                 "dim 1 (6) in the input tensor\" (same type, different message: ops/view.cpp unflatten)"),
    OpEntry("flip", ember.flip, _flip_samples, lambda a, dims: np.flip(a, tuple(dims)) if a.ndim else a.copy(),
            dtypes=ALL, aliases=("Tensor.flip",),
            errors=lambda d: [err(IndexError, "Dimension out of range", _o(d)(2, 3), (2,)),
                              err(RuntimeError, "dim 0 appears multiple times in the list of dims", _o(d)(2, 3), (0, 0))]),
    OpEntry("fliplr", ember.fliplr, _fliplr_samples, np.fliplr, dtypes=ALL, aliases=("Tensor.fliplr",),
            errors=lambda d: [err(RuntimeError, "Input must be >= 2-d", _o(d)(3))]),
    OpEntry("flipud", ember.flipud, _flipud_samples, np.flipud, dtypes=ALL, aliases=("Tensor.flipud",),
            errors=lambda d: [err(RuntimeError, "Input must be >= 1-d", _o(d)())]),
    OpEntry("roll", ember.roll, _roll_samples, _roll_ref, dtypes=ALL, aliases=("Tensor.roll",),
            errors=lambda d: [err(RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1",
                                  _o(d)(2, 3), (1, 2), (0,))]),
    OpEntry("Tensor.repeat", _m("repeat"), _repeat_samples, _repeat_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, "Number of dimensions of repeat dims can not be smaller than number "
                                  "of dimensions of tensor", _o(d)(2, 3), 2)]),
    OpEntry("tile", ember.tile, _tile_samples, np.tile, dtypes=ALL, aliases=("Tensor.tile",)),
    OpEntry("repeat_interleave", ember.repeat_interleave, _ri_samples, _ri_ref, dtypes=("float32", "float64", "int64"),
            aliases=("Tensor.repeat_interleave",),
            errors=lambda d: [err(RuntimeError, r"repeats must have the same size as input along dim, but got "
                                  r"repeats.size\(0\) = 2 and input.size\(0\) = 3",
                                  _o(d)(3), ember.tensor([1, 2], device=d)),
                              err(RuntimeError, "repeats can not be negative",
                                  _o(d)(3), ember.tensor([1, -2, 1], device=d))]),
    OpEntry("tril", ember.tril, _tri_samples, np.tril, dtypes=ALL, aliases=("Tensor.tril", "Tensor.tril_"),
            errors=lambda d: [err(RuntimeError, "tril: input tensor must have at least 2 dimensions", _o(d)(3))]),
    OpEntry("triu", ember.triu, _tri_samples, np.triu, dtypes=ALL, aliases=("Tensor.triu", "Tensor.triu_"),
            errors=lambda d: [err(RuntimeError, "triu: input tensor must have at least 2 dimensions", _o(d)(3))]),
]


def _ldiag_samples(d, t):
    yield _s(make((3, 4), d, t))
    yield _s(make((2, 3, 4), d, t), offset=1, desc="batched, offset 1")
    yield _s(make((2, 3, 4), d, t, noncontig=True), offset=-1, dim1=0, dim2=2, desc="dims, noncontig")
    yield _s(make((3, 3), d, t), offset=5, desc="offset past the edge: empty")
    yield _s(make((0, 3), d, t), desc="empty")


def _ldiag_ref(a, offset=0, dim1=-2, dim2=-1):
    return np.diagonal(a, offset, dim1, dim2).copy()


def _contig_samples(d, t):
    yield _s(make((3, 4), d, t), desc="already contiguous")
    yield _s(make((3, 4), d, t).t(), desc="transposed")
    yield _s(make((2, 3, 4), d, t, noncontig=True), desc="strided")
    yield _s(make((), d, t), desc="0-d")
    yield _s(make((0, 3), d, t).t(), desc="empty")


def _contiguous(a):
    out = a.contiguous()
    assert out.is_contiguous(), "Tensor.contiguous returned a non-contiguous tensor"
    return out


ENTRIES += [
    OpEntry("linalg.diagonal", ember.linalg.diagonal, _ldiag_samples, _ldiag_ref, dtypes=ALL,
            errors=lambda d: [err(IndexError, "Dimension out of range", ember.ones(3, device=d)),
                              err(RuntimeError, "diagonal dimensions cannot be identical 0, 0",
                                  ember.ones(2, 3, device=d), dim1=0, dim2=0)]),
    OpEntry("Tensor.contiguous", _contiguous, _contig_samples, lambda a: np.array(a, order="C", copy=True), dtypes=ALL),
]


# --- issue 6: in-place writers (copy_, fill_, zero_, fill_diagonal_) as entries. The op
# writes into a clone of its first input, so gradcheck sees a function of both inputs:
# the gradient must reach the source/value and be cut where the destination was overwritten.

def _into_clone(method):
    def op(dst, *args, **kwargs):
        y = dst.clone()
        ret = getattr(y, method)(*args, **kwargs)
        assert ret is y, f"Tensor.{method} must return its tensor"
        return y
    op.__name__ = method
    return op


def _copy_samples(d, t):
    yield _s(make((2, 3), d, t), make((2, 3), d, t, seed=1))
    yield _s(make((2, 3), d, t), make((3,), d, t, seed=1), desc="broadcast source")
    yield _s(make((2, 3), d, t, noncontig=True), make((3, 2), d, t, seed=1).t(), desc="strided both")
    yield _s(make((), d, t), make((), d, t, seed=1), desc="0-d")
    yield _s(make((0, 3), d, t), make((0, 3), d, t, seed=1), desc="empty")


def _copy_ref(dst, src):
    return np.broadcast_to(src, dst.shape).astype(dst.dtype).copy()


def _fill_samples(d, t):
    yield _s(make((2, 3), d, t), 2.0 if t.is_floating_point else 2, desc="scalar")
    yield _s(make((2, 3), d, t), make((), d, t, seed=1), desc="0-d tensor value")
    yield _s(make((2, 3), d, t, noncontig=True), make((), d, t, seed=2), desc="strided")
    yield _s(make((0, 3), d, t), make((), d, t, seed=1), desc="empty")


def _fill_diag_samples(d, t):
    yield _s(make((3, 3), d, t), 2.5 if t.is_floating_point else 2)
    yield _s(make((7, 3), d, t), -1.0 if t.is_floating_point else -1, desc="tall, no wrap")
    yield _s(make((7, 3), d, t), 4.0 if t.is_floating_point else 4, wrap=True, desc="tall, wrap")
    yield _s(make((2, 5), d, t), 0.5 if t.is_floating_point else 0, desc="wide")
    yield _s(make((2, 2, 2), d, t), 5.0 if t.is_floating_point else 5, desc="3-d cube")


def _fill_diag_ref(a, value, wrap=False):
    out = a.copy()
    np.fill_diagonal(out, value, wrap=wrap)
    return out


def _o3(d):
    return lambda *shape, **kw: ember.ones(*shape, device=d, **kw)


ENTRIES += [
    OpEntry("Tensor.copy_", _into_clone("copy_"), _copy_samples, _copy_ref, dtypes=ALL,
            errors=lambda d: [err(RuntimeError, r"expanded size of the tensor \(3\) must match the existing size "
                                  r"\(4\)", _o3(d)(2, 3), _o3(d)(4))],
            note="the size-mismatch message is the expand one (PyTorch: the broadcast 'size of tensor a' one)"),
    OpEntry("Tensor.fill_", _into_clone("fill_"), _fill_samples,
            lambda a, v: np.full_like(a, v), dtypes=ALL,
            errors=lambda d: [err(RuntimeError, "fill_ only supports 0-dimension value tensor but got tensor "
                                  "with 1 dimensions", _o3(d)(3), _o3(d)(2))]),
    OpEntry("Tensor.zero_", _into_clone("zero_"),
            lambda d, t: [_s(make((2, 3), d, t)), _s(make((2, 3), d, t, noncontig=True), desc="strided"),
                          _s(make((), d, t), desc="0-d"), _s(make((0, 3), d, t), desc="empty")],
            np.zeros_like, dtypes=ALL),
    OpEntry("Tensor.fill_diagonal_", _into_clone("fill_diagonal_"), _fill_diag_samples, _fill_diag_ref,
            dtypes=ALL,
            errors=lambda d: [err(RuntimeError, "dimensions must larger than 1", _o3(d)(3), 2.0),
                              err(RuntimeError, "all dimensions of input must be of equal length",
                                  _o3(d)(2, 3, 4), 2.0)]),
]
