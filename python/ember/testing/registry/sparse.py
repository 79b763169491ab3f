"""Registry entries for sparse COO tensors (ops/sparse*.cpp, ember.sparse): samples take
sparse inputs (coalesced, uncoalesced with repeated indices, hybrid with a dense dim, empty),
the references work on their dense form (tests/test_registry.py densifies sparse tensors),
and gradcheck perturbs a sparse input's specified values (autograd/gradcheck.py)."""
from __future__ import annotations

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make

FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def sparse(shape, device, dtype, *, nnz=5, dense_dims=0, seed=0, dup=False, full=False):
    """A sparse COO tensor of ``shape`` (the last ``dense_dims`` dims dense): ``nnz`` random
    entries (``dup``: with repeated indices, uncoalesced), or every position (``full``)."""
    rng = np.random.default_rng(seed + 31 * len(shape))
    sd = len(shape) - dense_dims
    sp_shape = shape[:sd]
    if full:
        idx = np.stack(np.unravel_index(np.arange(int(np.prod(sp_shape))), sp_shape))
    else:
        total = int(np.prod(sp_shape))
        lin = rng.choice(total, size=min(nnz, total), replace=False)
        if dup and len(lin):
            lin = np.concatenate([lin, lin[: max(1, len(lin) // 2)]])
            rng.shuffle(lin)
        idx = np.stack(np.unravel_index(np.sort(lin) if not dup else lin, sp_shape)).reshape(sd, -1)
    n = idx.shape[1]
    vals = make((n,) + tuple(shape[sd:]), device, dtype, seed=seed + 1)
    i = ember.tensor(idx.astype(np.int64), device=device)
    t = ember.sparse_coo_tensor(i, vals, shape)
    return t if dup else t.coalesce()


def _dense(x):
    return x.to_dense() if isinstance(x, ember.Tensor) and x.is_sparse else x


def densified(fn):
    """``fn`` with a sparse result in its dense form (what the references compare)."""
    def call(*args, **kwargs):
        return _dense(fn(*args, **kwargs))
    call.__name__ = getattr(fn, "__name__", "op")
    return call


def _mm_samples(device, dtype):
    yield _s(sparse((4, 5), device, dtype, nnz=7), make((5, 3), device, dtype), desc="coalesced")
    yield _s(sparse((4, 5), device, dtype, nnz=6, dup=True, seed=3), make((5, 2), device, dtype),
             desc="uncoalesced")
    yield _s(sparse((3, 4), device, dtype, nnz=0), make((4, 2), device, dtype), desc="nnz 0")
    yield _s(sparse((4, 5), device, dtype, nnz=5, seed=5),
             make((3, 5), device, dtype, seed=2).t(), desc="strided dense operand")


def _spmm_samples(device, dtype):
    # torch.mm gives the sparse operand a strided gradient: a fully specified sparse
    # matrix makes that gradient the masked one, so plain gradcheck applies.
    yield _s(sparse((3, 4), device, dtype, full=True), make((4, 2), device, dtype))
    yield _s(make((2, 3), device, dtype), sparse((3, 4), device, dtype, full=True, seed=4),
             desc="dense @ sparse")


def _addmm_samples(device, dtype):
    yield _s(make((4, 3), device, dtype), sparse((4, 5), device, dtype, nnz=8),
             make((5, 3), device, dtype, seed=2))
    yield _s(make((3,), device, dtype), sparse((4, 5), device, dtype, nnz=6, dup=True),
             make((5, 3), device, dtype, seed=2), beta=0.5, alpha=2.0, desc="broadcast, scaled")


def _sum_samples(device, dtype):
    yield _s(sparse((3, 4), device, dtype, nnz=6))
    yield _s(sparse((3, 4, 2), device, dtype, nnz=5, dense_dims=1, dup=True), dim=1)
    yield _s(sparse((3, 4, 2), device, dtype, nnz=5, dense_dims=1), dim=(0, 2))
    yield _s(sparse((3, 4), device, dtype, nnz=6, seed=2), dim=(0, 1))


def _softmax_ref(log):
    def ref(x, dim, dtype=None):
        # unspecified elements count as -inf: they stay zero in the dense result
        mask = x != 0
        z = np.where(mask, x, -np.inf)
        m = np.max(z, axis=dim, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        e = np.where(mask, np.exp(z - m), 0)
        s = e.sum(axis=dim, keepdims=True)
        if log:
            return np.where(mask, z - m - np.log(np.where(s > 0, s, 1)), 0)
        return np.where(mask, e / np.where(s > 0, s, 1), 0)
    return ref


def _softmax_samples(device, dtype):
    yield _s(sparse((4, 5), device, dtype, nnz=9), 1)
    yield _s(sparse((4, 5), device, dtype, nnz=9, seed=2), 0)
    yield _s(sparse((3, 4, 2), device, dtype, nnz=6, dense_dims=1), -1, desc="dense dim")


def _binary_samples(op):
    def samples(device, dtype):
        yield _s(sparse((3, 4), device, dtype, nnz=6), sparse((3, 4), device, dtype, nnz=5, seed=2))
        yield _s(sparse((3, 4), device, dtype, nnz=6, dup=True),
                 sparse((3, 4), device, dtype, nnz=4, seed=2), desc="uncoalesced")
        yield _s(make((3, 4), device, dtype), sparse((3, 4), device, dtype, nnz=5), desc="dense op sparse")
        if op != "add":
            yield _s(sparse((3, 4), device, dtype, nnz=5), make((3, 4), device, dtype), desc="sparse op dense")
        yield _s(sparse((3, 4, 2), device, dtype, nnz=4, dense_dims=1),
                 sparse((3, 4, 2), device, dtype, nnz=3, dense_dims=1, seed=2), desc="hybrid")
    return samples


def _structural_samples(device, dtype):
    yield _s(sparse((4, 5), device, dtype, nnz=8))
    yield _s(sparse((4, 5), device, dtype, nnz=6, dup=True, seed=2), desc="uncoalesced")
    yield _s(sparse((3, 4, 2), device, dtype, nnz=5, dense_dims=1, seed=3), desc="hybrid")


def _errors_mm(device):
    s = sparse((3, 4), device, ember.float32, nnz=3)
    return [err(RuntimeError, r"addmm: Argument #3 \(dense\): Expected dim 0 size 4, got 3", s,
                ember.ones(3, 2, device=device)),
            err(RuntimeError, "expected scalar type Float but found Double", s,
                ember.ones(4, 2, dtype=ember.float64, device=device)),
            err(RuntimeError, "scalar values expected",
                sparse((3, 4, 2), device, ember.float32, dense_dims=1), ember.ones(4, 2, device=device))]


def _errors_ctor(device):
    i = ember.tensor([[0, 1], [2, 0]], device=device)
    return [err(RuntimeError, "indices must be sparse_dim x nnz", ember.tensor([0, 1], device=device),
                ember.ones(2, device=device), (2,)),
            err(RuntimeError, "indices and values must have same nnz", i, ember.ones(3, device=device), (2, 3)),
            err(RuntimeError, "size is inconsistent with indices", i, ember.ones(2, device=device), (2, 2)),
            err(RuntimeError, "found negative index", ember.tensor([[0, -1]], device=device),
                ember.ones(2, device=device), (3,)),
            err(RuntimeError, r"number of dimensions must be sparse_dim \(2\) \+ dense_dim \(0\)", i,
                ember.ones(2, device=device), (2, 3, 4))]


ENTRIES = [
    OpEntry("sparse_coo_tensor", densified(ember.sparse_coo_tensor),
            lambda d, t: [_s(ember.tensor([[0, 1, 1, 0], [2, 0, 2, 2]], device=d),
                             make((4,), d, t), (2, 3)),
                          _s(ember.tensor([[0, 2, 1]], device=d), make((3, 2), d, t), desc="hybrid, inferred size")],
            lambda i, v, size=None: _coo_ref(i, v, size), dtypes=FL + ("int64",), errors=_errors_ctor),
    OpEntry("sparse.mm", ember.sparse.mm, _mm_samples, lambda a, b: a @ b, dtypes=FL, atol=1e-5,
            errors=_errors_mm,
            note="the sparse operand's gradient is sparse on its pattern (SparseAddmmBackward0); "
                 "sparse x sparse is in tests/test_sparse.py"),
    OpEntry("spmm", ember.spmm, _spmm_samples, lambda a, b: a @ b, dtypes=FL,
            note="ember.mm/matmul/@ with a sparse operand: the same path (MmBackward0, strided "
                 "gradient; masked gradcheck in tests/test_sparse.py)"),
    OpEntry("sparse.addmm", ember.sparse.addmm, _addmm_samples,
            lambda m, a, b, beta=1.0, alpha=1.0: beta * m + alpha * (a @ b), dtypes=FL),
    OpEntry("sparse.sum", densified(ember.sparse.sum), _sum_samples,
            lambda x, dim=None: np.asarray(x.sum(axis=dim)), dtypes=FL + ("int64",)),
    OpEntry("sparse.softmax", densified(ember.sparse.softmax), _softmax_samples, _softmax_ref(False),
            dtypes=FL, note="samples have no explicitly stored zeros: the reference masks x != 0"),
    OpEntry("sparse.log_softmax", densified(ember.sparse.log_softmax), _softmax_samples,
            _softmax_ref(True), dtypes=FL),
    OpEntry("Tensor.to_dense", lambda s: s.to_dense(), _structural_samples, lambda x: x,
            dtypes=FL + ("int64", "bool")),
    # to_dense(masked_grad=False): a zero's gradient flows back too (the pattern may grow)
    OpEntry("Tensor.to_sparse", lambda x, *a: x.to_sparse(*a).to_dense(masked_grad=False),
            lambda d, t: [_s(make((3, 4), d, t) * (make((3, 4), d, t, seed=4) > 0)),
                          _s(make((3, 4, 2), d, t), 2, desc="hybrid")],
            lambda x, *a: x, dtypes=FL + ("int64",), aliases=("Tensor.to_sparse_coo",)),
    OpEntry("Tensor.coalesce", densified(lambda s: s.coalesce()), _structural_samples, lambda x: x,
            dtypes=FL + ("int64", "bool")),
    OpEntry("Tensor.values", lambda s: s.coalesce().values(), _structural_samples,
            None, dtypes=FL, note="values are checked against the dense form in tests/test_sparse.py"),
    OpEntry("Tensor.sparse_mask", densified(lambda x, m: x.sparse_mask(m)),
            lambda d, t: [_s(make((4, 5), d, t), sparse((4, 5), d, t, nnz=7)),
                          _s(sparse((4, 5), d, t, nnz=9, seed=2), sparse((4, 5), d, t, nnz=7), desc="sparse self")],
            lambda x, m: np.where(m != 0, x, 0), dtypes=FL,
            note="mask samples have no stored zeros, so the reference masks m != 0"),
    # The generic ops on sparse operands (their strided entries are in the other families).
    OpEntry("sparse_coo.add", densified(ember.add), _binary_samples("add"), lambda a, b: a + b, dtypes=FL),
    OpEntry("sparse_coo.mul", densified(ember.mul), _binary_samples("mul"), lambda a, b: a * b, dtypes=FL),
    OpEntry("sparse_coo.transpose", densified(lambda s: s.transpose(0, 1)), _structural_samples,
            lambda x: np.swapaxes(x, 0, 1), dtypes=FL),
    OpEntry("sparse_coo.index_select", densified(lambda s, i: s.index_select(0, i)),
            lambda d, t: [_s(sparse((4, 5), d, t, nnz=8), ember.tensor([3, 0, 3, 1], device=d)),
                          _s(sparse((4, 5), d, t, nnz=6, dup=True), ember.tensor([2, 2], device=d)),
                          _s(sparse((4, 5, 2), d, t, nnz=5, dense_dims=1), ember.tensor([1], device=d))],
            lambda x, i: x[i], dtypes=FL),
    OpEntry("sparse_coo.narrow_copy", densified(lambda s, *a: s.narrow_copy(*a)),
            lambda d, t: [_s(sparse((5, 4), d, t, nnz=9), 0, 1, 3),
                          _s(sparse((5, 4), d, t, nnz=7, dup=True), 1, 2, 2),
                          _s(sparse((5, 4, 3), d, t, nnz=6, dense_dims=1), 2, 1, 2)],
            lambda x, dim, start, n: np.take(x, range(start, start + n), axis=dim), dtypes=FL),
]


def _coo_ref(i, v, size):
    i = np.asarray(i)
    shape = tuple(size) if size is not None else tuple(int(m) + 1 for m in i.max(axis=1)) + v.shape[1:]
    out = np.zeros(shape, dtype=v.dtype)
    np.add.at(out, tuple(i), v)
    return out
