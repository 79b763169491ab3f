"""Registry entries for contractions (ops/einsum.cpp) and ember.linalg."""
from __future__ import annotations

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make

FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


_EINSUM_CASES = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("i,i", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->j", [(2, 2, 3)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
]


def _einsum_samples(device, dtype):
    for k, (eq, shapes) in enumerate(_EINSUM_CASES):
        ops = [make(s, device, dtype, seed=k * 10 + i) for i, s in enumerate(shapes)]
        yield _s(eq, *ops, desc=eq)


def _einsum_ref(eq, *ops):
    return np.einsum(eq, *ops)


ENTRIES = [
    OpEntry("einsum", ember.einsum, _einsum_samples, _einsum_ref, dtypes=FL, atol=1e-4,
            errors=lambda d: [err(RuntimeError, "invalid subscript", "i1->i", ember.ones(2, device=d)),
                              err(RuntimeError, "does not match the number of dimensions", "ij->i", ember.ones(2, device=d)),
                              err(RuntimeError, "repeated for operand", "ii->i", ember.ones(2, 3, device=d)),
                              err(RuntimeError, "more operands", "i->i", ember.ones(2, device=d), ember.ones(2, device=d))]),
    OpEntry("tensordot", ember.tensordot,
            lambda d, t: [_s(make((3, 4, 5), d, t), make((4, 5, 2), d, t, seed=2)),
                          _s(make((3, 4, 5), d, t), make((5, 3), d, t, seed=2), ([0, 2], [1, 0])),
                          _s(make((3, 4), d, t), make((4, 2), d, t, seed=2), 1)],
            lambda a, b, dims=2: np.tensordot(a, b, dims), dtypes=FL, atol=1e-4,
            errors=lambda d: [err(RuntimeError, "contracted dimensions need to match", ember.ones(2, 3, device=d),
                                  ember.ones(2, 3, device=d), ([0], [1]))]),
    OpEntry("kron", ember.kron, lambda d, t: [_s(make((2, 3), d, t), make((3, 2), d, t, seed=2)),
                                              _s(make((2,), d, t), make((2, 3), d, t, seed=2))],
            np.kron, dtypes=FL + ("int64",), aliases=("Tensor.kron",)),
    OpEntry("inner", ember.inner, lambda d, t: [_s(make((2, 3), d, t), make((4, 3), d, t, seed=2)),
                                                _s(make((3,), d, t), make((3,), d, t, seed=2)),
                                                _s(make((), d, t), make((2, 2), d, t, seed=2))],
            np.inner, dtypes=FL, aliases=("Tensor.inner",),
            errors=lambda d: [err(RuntimeError, "last dimension must match", ember.ones(2, device=d), ember.ones(3, device=d))]),
    OpEntry("cross", ember.cross, lambda d, t: [_s(make((4, 3), d, t), make((4, 3), d, t, seed=2), dim=1),
                                                _s(make((3, 2), d, t), make((3, 1), d, t, seed=2), dim=0)],
            lambda a, b, dim=None: np.cross(a, b, axis=dim), dtypes=FL, aliases=("Tensor.cross",),
            errors=lambda d: [err(RuntimeError, "must have length 3", ember.ones(2, 2, device=d),
                                  ember.ones(2, 2, device=d), dim=1)]),
    OpEntry("matrix_power", ember.matrix_power,
            lambda d, t: [_s(make((3, 3), d, t, low=-1, high=1), n) for n in (0, 1, 2, 5)] +
            [_s(make((2, 3, 3), d, t, low=-1, high=1), 3)],
            np.linalg.matrix_power, dtypes=FL, atol=1e-4, aliases=("Tensor.matrix_power",),
            errors=lambda d: [err(RuntimeError, "square matrices", ember.ones(2, 3, device=d), 2)]),
]


# ---- ember.linalg through LAPACK ----

def _wellcond(shape, device, dtype, seed=0):
    """A random square (batched) matrix with a dominant diagonal: safely invertible."""
    a = make(shape, device, dtype, low=-1, high=1, seed=seed)
    n = shape[-1]
    return a + ember.eye(n, dtype=dtype, device=device) * n


def _spd(x):
    """x x^T + n I: symmetric positive definite and differentiable in x."""
    n = x.shape[-1]
    return x @ x.mT + ember.eye(n, dtype=x.dtype, device=x.device) * n


def _spd_np(x):
    n = x.shape[-1]
    return x @ np.swapaxes(x, -1, -2) + np.eye(n) * n


def _sym(x):
    return x + x.mT


def _sym_np(x):
    return x + np.swapaxes(x, -1, -2)


def _lin(name):
    return getattr(ember.linalg, name)


def _svd_inv(A, full_matrices=False):
    """Gauge-invariant outputs of svd: S, and U diag(S) Vh rebuilt."""
    U, S, Vh = ember.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    return S, (U[..., :, :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]


def _svd_inv_ref(A, full_matrices=False):
    S = np.linalg.svd(A, compute_uv=False)
    return S, A


def _svd_uv(A):
    """U and Vh products that do not depend on the sign of each singular vector."""
    U, S, Vh = ember.linalg.svd(A, full_matrices=False)
    return U * U, Vh * Vh


def _svd_uv_ref(A):
    U, S, Vh = np.linalg.svd(A, full_matrices=False)
    return U * U, Vh * Vh


def _eigh_inv(x):
    L, V = ember.linalg.eigh(_sym(x))
    return L, V * V


def _eigh_inv_ref(x):
    L, V = np.linalg.eigh(_sym_np(x))
    return L, V * V


def _qr_op(A, mode="reduced"):
    Q, R = ember.linalg.qr(A, mode=mode)
    # Fix the sign gauge so the comparison does not depend on LAPACK's choice.
    s = ember.sign(ember.diagonal(R, 0, -2, -1))
    if Q.shape[-1] > s.shape[-1]:  # complete mode: the extra columns keep their sign
        s = ember.cat([s, ember.ones(*s.shape[:-1], Q.shape[-1] - s.shape[-1], dtype=s.dtype)], -1)
    return Q * s.unsqueeze(-2), R * s[..., :R.shape[-2]].unsqueeze(-1)


def _qr_ref(A, mode="reduced"):
    Q, R = np.linalg.qr(A, mode=mode)
    s = np.sign(np.diagonal(R, 0, -2, -1))
    if Q.shape[-1] > s.shape[-1]:
        s = np.concatenate([s, np.ones(s.shape[:-1] + (Q.shape[-1] - s.shape[-1],))], -1)
    return Q * s[..., None, :], R * s[..., :R.shape[-2], None]


def _singular(d):
    return ember.tensor([[1.0, 2.0], [2.0, 4.0]], device=d)


ENTRIES += [
    OpEntry("linalg.solve", _lin("solve"),
            lambda d, t: [_s(_wellcond((3, 3), d, t), make((3, 2), d, t, seed=2)),
                          _s(_wellcond((2, 3, 3), d, t), make((3,), d, t, seed=3)),
                          _s(_wellcond((2, 3, 3), d, t), make((2, 3), d, t, seed=3), desc="batched vector"),
                          _s(_wellcond((3, 3), d, t), make((2, 4, 3, 1), d, t, seed=4), desc="broadcast")],
            lambda A, B: np.linalg.solve(A, B) if B.ndim != A.ndim - 1 else np.linalg.solve(A, B[..., None])[..., 0],
            dtypes=FL, atol=1e-5,
            errors=lambda d: [err(RuntimeError, "singular", _singular(d), ember.ones(2, 1, device=d)),
                              err(ember.linalg.LinAlgError, "singular", _singular(d), ember.ones(2, 1, device=d)),
                              err(RuntimeError, "square matrices", ember.ones(2, 3, device=d), ember.ones(2, device=d)),
                              err(RuntimeError, "Incompatible shapes", ember.eye(3, device=d), ember.ones(2, 1, device=d))]),
    OpEntry("linalg.solve_triangular", _lin("solve_triangular"),
            lambda d, t: [_s(_wellcond((3, 3), d, t).triu(), make((3, 2), d, t, seed=2), upper=True),
                          _s(_wellcond((2, 3, 3), d, t).tril(), make((2, 3, 4), d, t, seed=3), upper=False),
                          _s(_wellcond((3, 3), d, t).tril(), make((2, 3), d, t, seed=4), upper=False, left=False),
                          _s(_wellcond((3, 3), d, t).triu(), make((3, 2), d, t, seed=5), upper=True, unitriangular=True)],
            lambda A, B, upper, left=True, unitriangular=False: (lambda Am: np.linalg.solve(Am, B) if left else
                                                                 np.swapaxes(np.linalg.solve(np.swapaxes(Am, -1, -2), np.swapaxes(B, -1, -2)), -1, -2))(
                (np.triu(A) if upper else np.tril(A)) if not unitriangular else
                (np.triu(A, 1) if upper else np.tril(A, -1)) + np.eye(A.shape[-1])),
            dtypes=FL, atol=1e-5),
    OpEntry("linalg.inv", _lin("inv"), lambda d, t: [_s(_wellcond((3, 3), d, t)), _s(_wellcond((2, 4, 4), d, t))],
            np.linalg.inv, dtypes=FL, aliases=("inverse", "Tensor.inverse", "linalg.inv_ex"),
            errors=lambda d: [err(ember.linalg.LinAlgError, "singular", _singular(d)),
                              err(RuntimeError, "floating point", ember.ones(2, 2, dtype=ember.int64, device=d))]),
    OpEntry("linalg.det", _lin("det"), lambda d, t: [_s(make((3, 3), d, t)), _s(make((2, 4, 4), d, t, seed=1)),
                                                    _s(_wellcond((1, 1), d, t))],
            np.linalg.det, dtypes=FL, atol=1e-5, aliases=("det", "Tensor.det")),
    OpEntry("linalg.slogdet", _lin("slogdet"), lambda d, t: [_s(make((3, 3), d, t)), _s(make((2, 4, 4), d, t, seed=1))],
            lambda A: tuple(np.linalg.slogdet(A)), dtypes=FL, atol=1e-5, aliases=("slogdet", "Tensor.slogdet")),
    OpEntry("logdet", ember.logdet, lambda d, t: [_s(_wellcond((3, 3), d, t)), _s(make((3, 3), d, t, seed=5))],
            lambda A: (lambda sgn, logabs: np.where(sgn < 0, np.nan, logabs))(*np.linalg.slogdet(A)), dtypes=FL, atol=1e-5,
            aliases=("Tensor.logdet",)),
    OpEntry("linalg.cholesky", lambda x, upper=False, raw=False: ember.linalg.cholesky(x if raw else _spd(x), upper=upper),
            lambda d, t: [_s(make((3, 3), d, t)), _s(make((2, 4, 4), d, t, seed=1)), _s(make((3, 3), d, t), upper=True)],
            lambda x, upper=False: (lambda L: np.swapaxes(L, -1, -2) if upper else L)(np.linalg.cholesky(_spd_np(x))),
            dtypes=FL, atol=1e-5, aliases=("cholesky", "Tensor.cholesky", "linalg.cholesky_ex"),
            errors=lambda d: [err(ember.linalg.LinAlgError, "not positive-definite", lambda_neg_def(d), raw=True)]),
    OpEntry("linalg.svd", _svd_inv,
            lambda d, t: [_s(make((4, 3), d, t)), _s(make((3, 5), d, t, seed=1)), _s(make((2, 3, 3), d, t, seed=2)),
                          _s(make((4, 3), d, t, seed=3), full_matrices=True)],
            _svd_inv_ref, dtypes=FL, atol=1e-5, aliases=("svd", "Tensor.svd")),
    OpEntry("linalg.svd_vectors", _svd_uv, lambda d, t: [_s(make((4, 3), d, t)), _s(make((3, 5), d, t, seed=1))],
            _svd_uv_ref, dtypes=FL, atol=1e-5),
    OpEntry("linalg.svdvals", _lin("svdvals"), lambda d, t: [_s(make((4, 3), d, t)), _s(make((2, 3, 5), d, t, seed=1))],
            lambda A: np.linalg.svd(A, compute_uv=False), dtypes=FL, atol=1e-5),
    OpEntry("linalg.eigh", _eigh_inv, lambda d, t: [_s(make((3, 3), d, t)), _s(make((2, 4, 4), d, t, seed=1))],
            _eigh_inv_ref, dtypes=FL, atol=1e-5),
    OpEntry("linalg.eigvalsh", lambda x, UPLO="L": ember.linalg.eigvalsh(_sym(x), UPLO),
            lambda d, t: [_s(make((3, 3), d, t)), _s(make((2, 4, 4), d, t, seed=1), "U")],
            lambda x, UPLO="L": np.linalg.eigvalsh(_sym_np(x)), dtypes=FL, atol=1e-5),
    OpEntry("linalg.qr", _qr_op, lambda d, t: [_s(make((4, 3), d, t)), _s(make((3, 3), d, t, seed=1)),
                                               _s(make((2, 5, 3), d, t, seed=2))],
            _qr_ref, dtypes=FL, atol=1e-5, aliases=("qr", "Tensor.qr")),
    OpEntry("linalg.qr_complete", lambda A: _qr_op(A, "complete"), lambda d, t: [_s(make((4, 3), d, t))],
            lambda A: _qr_ref(A, "complete"),
            dtypes=FL, atol=1e-5, grad=False),
    OpEntry("linalg.pinv", _lin("pinv"), lambda d, t: [_s(make((4, 3), d, t)), _s(make((2, 3, 5), d, t, seed=1))],
            np.linalg.pinv, dtypes=FL, atol=1e-5, aliases=("pinverse", "Tensor.pinverse")),
    OpEntry("linalg.matrix_rank", _lin("matrix_rank"),
            lambda d, t: [_s(make((4, 3), d, t)), _s(ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=t, device=d))],
            np.linalg.matrix_rank, dtypes=FL, grad=False),
    OpEntry("linalg.matrix_norm", _lin("matrix_norm"),
            lambda d, t: [_s(make((3, 4), d, t), o) for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))] +
            [_s(make((2, 3, 3), d, t, seed=1), 2, keepdim=True)],
            lambda A, ord="fro", keepdim=False: (lambda r: r.reshape(r.shape + (1, 1)) if keepdim else r)(
                np.linalg.norm(A, ord, axis=(-2, -1))),
            dtypes=FL, atol=1e-5),
    OpEntry("linalg.cond", _lin("cond"), lambda d, t: [_s(_wellcond((3, 3), d, t)), _s(_wellcond((3, 3), d, t), 1),
                                                      _s(_wellcond((3, 3), d, t), "fro")],
            lambda A, p=None: np.linalg.cond(A, p), dtypes=FL, atol=1e-5),
    OpEntry("linalg.lstsq", lambda A, B: ember.linalg.lstsq(A, B).solution,
            lambda d, t: [_s(make((5, 3), d, t), make((5, 2), d, t, seed=1))],
            lambda A, B: np.linalg.lstsq(A, B, rcond=None)[0], dtypes=FL, atol=1e-5),
    OpEntry("linalg.multi_dot", lambda *ts: ember.linalg.multi_dot(list(ts)),
            lambda d, t: [_s(make((3,), d, t), make((3, 4), d, t, seed=1), make((4, 2), d, t, seed=2))],
            lambda *ts: np.linalg.multi_dot(ts), dtypes=FL, atol=1e-5),
    OpEntry("linalg.vecdot", _lin("vecdot"), lambda d, t: [_s(make((3, 4), d, t), make((4,), d, t, seed=1))],
            lambda x, y: np.sum(x * y, -1), dtypes=FL),
    OpEntry("linalg.matrix_power", ember.linalg.matrix_power,
            lambda d, t: [_s(_wellcond((3, 3), d, t), -2), _s(_wellcond((3, 3), d, t), 3)],
            np.linalg.matrix_power, dtypes=FL, atol=1e-5),
]


def lambda_neg_def(d):
    return ember.tensor([[1.0, 2.0], [2.0, 1.0]], device=d)


def _expm_sym_ref(x):
    a = _sym_np(x)
    w, v = np.linalg.eigh(a)
    return (v * np.exp(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


ENTRIES += [
    OpEntry("matrix_exp", lambda x: ember.matrix_exp(_sym(x)),
            lambda d, t: [_s(make((3, 3), d, t, low=-1, high=1)), _s(make((2, 4, 4), d, t, low=-2, high=2, seed=1))],
            _expm_sym_ref, dtypes=FL, atol=1e-6, aliases=("Tensor.matrix_exp", "linalg.matrix_exp")),
]


def _lu_solve_op(a_np, B, adjoint=False):
    """lu_solve with the factors of a NumPy matrix (so gradcheck perturbs B only: ember
    differentiates lu_solve with respect to B, not LU)."""
    LU, piv = ember.linalg.lu_factor(ember.tensor(a_np, dtype=B.dtype, device=B.device))
    return ember.linalg.lu_solve(LU, piv, B, adjoint=adjoint)


def _lu_solve_ref(a, B, adjoint=False):
    return np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, B)


ENTRIES += [
    OpEntry("linalg.lu_solve", _lu_solve_op,
            lambda d, t: [_s(np.eye(3) * 3 + np.arange(9.0).reshape(3, 3) / 10, make((3, 2), d, t)),
                          _s(np.eye(3) * 3 + np.arange(9.0).reshape(3, 3) / 10, make((3, 2), d, t), adjoint=True)],
            _lu_solve_ref, dtypes=FL, atol=1e-5, aliases=("linalg.lu_factor",),
            note="lu_factor's derivative is not implemented (raises); lu_solve differentiates in B only"),
]


# --- matrix products (issue 6: moved out of _exempt.py so they get registry gradcheck) ---

def _mat(shape, d, t, seed=0, t_view=False):
    """``shape`` tensor; ``t_view`` makes it a transposed (non-contiguous) view."""
    if t_view:
        return make(shape[:-2] + (shape[-1], shape[-2]), d, t, seed=seed).transpose(-1, -2)
    return make(shape, d, t, seed=seed)


def _mm_samples(d, t):
    yield _s(_mat((3, 4), d, t), _mat((4, 5), d, t, 1))
    yield _s(_mat((3, 4), d, t, t_view=True), _mat((4, 5), d, t, 1, t_view=True), desc="transposed views")
    yield _s(make((3, 4), d, t, noncontig=True), _mat((4, 2), d, t, 1), desc="strided")
    yield _s(_mat((1, 1), d, t), _mat((1, 1), d, t, 1), desc="1x1")
    yield _s(_mat((0, 4), d, t), _mat((4, 5), d, t, 1), desc="empty m")
    yield _s(_mat((3, 0), d, t), _mat((0, 5), d, t, 1), desc="empty k")


def _bmm_samples(d, t):
    yield _s(_mat((2, 3, 4), d, t), _mat((2, 4, 5), d, t, 1))
    yield _s(_mat((2, 3, 4), d, t, t_view=True), _mat((2, 4, 5), d, t, 1), desc="transposed view")
    yield _s(_mat((1, 1, 1), d, t), _mat((1, 1, 1), d, t, 1), desc="1x1x1")
    yield _s(_mat((0, 3, 4), d, t), _mat((0, 4, 5), d, t, 1), desc="empty batch")
    yield _s(_mat((2, 3, 0), d, t), _mat((2, 0, 5), d, t, 1), desc="empty k")


def _matmul_samples(d, t):
    yield _s(make((4,), d, t), make((4,), d, t, seed=1), desc="1d@1d")
    yield _s(make((3, 4), d, t), make((4,), d, t, seed=1), desc="2d@1d")
    yield _s(make((4,), d, t), make((4, 5), d, t, seed=1), desc="1d@2d")
    yield _s(make((3, 4), d, t), make((4, 5), d, t, seed=1), desc="2d@2d")
    yield _s(make((2, 3, 4), d, t), make((4, 5), d, t, seed=1), desc="3d@2d")
    yield _s(make((4,), d, t), make((2, 4, 5), d, t, seed=1), desc="1d@3d")
    yield _s(make((2, 3, 4), d, t), make((4,), d, t, seed=1), desc="3d@1d")
    yield _s(make((2, 1, 3, 4), d, t), make((5, 4, 2), d, t, seed=1), desc="batch broadcast")
    yield _s(_mat((2, 3, 4), d, t, t_view=True), make((2, 4, 2), d, t, seed=1, noncontig=True),
             desc="non-contiguous")
    yield _s(make((0, 3, 4), d, t), make((4, 2), d, t, seed=1), desc="empty batch")
    yield _s(make((0,), d, t), make((0,), d, t, seed=1), desc="empty 1d@1d")


def _addmm_samples(d, t):
    yield _s(make((3, 5), d, t, seed=2), _mat((3, 4), d, t), _mat((4, 5), d, t, 1))
    yield _s(make((5,), d, t, seed=2), _mat((3, 4), d, t), _mat((4, 5), d, t, 1), desc="bias broadcast")
    yield _s(make((), d, t, seed=2), _mat((3, 4), d, t, t_view=True), _mat((4, 5), d, t, 1),
             beta=0.5, alpha=-2.0, desc="0-d input, beta/alpha")
    yield _s(make((3, 1), d, t, seed=2), _mat((3, 4), d, t), _mat((4, 5), d, t, 1, t_view=True),
             beta=0, desc="beta 0")
    yield _s(make((3, 5), d, t, seed=2), _mat((3, 0), d, t), _mat((0, 5), d, t, 1), desc="empty k")


def _addmv_samples(d, t):
    yield _s(make((3,), d, t, seed=2), make((3, 4), d, t), make((4,), d, t, seed=1))
    yield _s(make((1,), d, t, seed=2), _mat((3, 4), d, t, t_view=True), make((4,), d, t, seed=1, noncontig=True),
             beta=2.0, alpha=0.5, desc="broadcast, strided")
    yield _s(make((), d, t, seed=2), make((3, 4), d, t), make((4,), d, t, seed=1), desc="0-d input")
    yield _s(make((3,), d, t, seed=2), make((3, 0), d, t), make((0,), d, t, seed=1), desc="empty k")


def _baddbmm_samples(d, t):
    yield _s(make((2, 3, 5), d, t, seed=2), _mat((2, 3, 4), d, t), _mat((2, 4, 5), d, t, 1))
    yield _s(make((5,), d, t, seed=2), _mat((2, 3, 4), d, t, t_view=True), _mat((2, 4, 5), d, t, 1),
             beta=0.5, alpha=1.5, desc="broadcast input, strided")
    yield _s(make((2, 3, 5), d, t, seed=2), _mat((2, 3, 0), d, t), _mat((2, 0, 5), d, t, 1), desc="empty k")


def _addmm_ref(inp, a, b, *, beta=1, alpha=1):
    r = alpha * (a @ b)
    return (r + beta * inp if beta != 0 else r + np.zeros_like(inp)).astype(a.dtype)


def _addmv_ref(inp, m, v, *, beta=1, alpha=1):
    r = alpha * (m @ v)
    return (r + beta * inp if beta != 0 else r + np.zeros_like(inp)).astype(m.dtype)


def _vec_samples(d, t):
    yield _s(make((5,), d, t), make((5,), d, t, seed=1))
    yield _s(make((5,), d, t, noncontig=True), make((5,), d, t, seed=1, noncontig=True), desc="strided")
    yield _s(make((1,), d, t), make((1,), d, t, seed=1))
    yield _s(make((0,), d, t), make((0,), d, t, seed=1), desc="empty")


def _mv_samples(d, t):
    yield _s(make((3, 4), d, t), make((4,), d, t, seed=1))
    yield _s(_mat((3, 4), d, t, t_view=True), make((4,), d, t, seed=1, noncontig=True), desc="strided")
    yield _s(make((0, 4), d, t), make((4,), d, t, seed=1), desc="empty rows")
    yield _s(make((3, 0), d, t), make((0,), d, t, seed=1), desc="empty k")


def _outer_samples(d, t):
    yield _s(make((3,), d, t), make((4,), d, t, seed=1))
    yield _s(make((3,), d, t, noncontig=True), make((4,), d, t, seed=1, noncontig=True), desc="strided")
    yield _s(make((0,), d, t), make((4,), d, t, seed=1), desc="empty")


def _cross_samples(d, t):
    yield _s(make((4, 3), d, t), make((4, 3), d, t, seed=1))
    yield _s(make((3,), d, t), make((3,), d, t, seed=1), desc="1-d")
    yield _s(make((3, 4), d, t), make((3, 4), d, t, seed=1), dim=0, desc="dim 0")
    yield _s(make((2, 1, 3), d, t), make((1, 5, 3), d, t, seed=1), desc="broadcast")
    yield _s(make((3, 3), d, t).t(), make((3, 3), d, t, seed=1), desc="non-contiguous")
    yield _s(make((0, 3), d, t), make((0, 3), d, t, seed=1), desc="empty")


def _cross_ref(a, b, dim=-1):
    return np.cross(a, b, axis=dim)


def _o(d):
    return lambda *shape, **kw: ember.ones(*shape, device=d, **kw)


MM = ("float32", "float64", "int64")

ENTRIES += [
    OpEntry("mm", ember.mm, _mm_samples, np.matmul, dtypes=MM, aliases=("Tensor.mm",),
            errors=lambda d: [err(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
                                  _o(d)(2, 3), _o(d)(4, 5)),
                              err(RuntimeError, "self must be a matrix, got 3-D tensor", _o(d)(2, 3, 1), _o(d)(4, 5)),
                              err(RuntimeError, "expected m1 and m2 to have the same dtype",
                                  _o(d)(2, 3), _o(d)(3, 5, dtype=ember.float64))]),
    OpEntry("bmm", ember.bmm, _bmm_samples, np.matmul, dtypes=MM, aliases=("Tensor.bmm",),
            errors=lambda d: [err(RuntimeError, r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\]",
                                  _o(d)(2, 2, 3), _o(d)(3, 3, 5)),
                              err(RuntimeError, "batch1 must be a 3D tensor", _o(d)(2, 3), _o(d)(3, 5))]),
    OpEntry("matmul", ember.matmul, _matmul_samples, lambda a, b: np.asarray(np.matmul(a, b)), dtypes=MM,
            aliases=("Tensor.matmul", "linalg.matmul"),
            errors=lambda d: [err(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
                                  _o(d)(2, 3), _o(d)(4, 5)),
                              err(RuntimeError, "both arguments to matmul need to be at least 1D, but they are 0D and 1D",
                                  _o(d)(), _o(d)(4))]),
    OpEntry("addmm", ember.addmm, _addmm_samples, _addmm_ref, dtypes=FL, aliases=("Tensor.addmm", "Tensor.addmm_"),
            errors=lambda d: [err(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
                                  _o(d)(2, 5), _o(d)(2, 3), _o(d)(4, 5)),
                              err(RuntimeError, r"expanded size of the tensor \(2\) must match the existing size \(3\)",
                                  _o(d)(3, 5), _o(d)(2, 3), _o(d)(3, 5))]),
    OpEntry("addmv", ember.addmv, _addmv_samples, _addmv_ref, dtypes=FL, aliases=("Tensor.addmv", "Tensor.addmv_"),
            errors=lambda d: [err(RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)",
                                  _o(d)(2), _o(d)(2, 3), _o(d)(4))]),
    OpEntry("baddbmm", ember.baddbmm, _baddbmm_samples, _addmm_ref, dtypes=FL,
            aliases=("Tensor.baddbmm", "Tensor.baddbmm_"),
            errors=lambda d: [err(RuntimeError, r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\]",
                                  _o(d)(2, 2, 5), _o(d)(2, 2, 3), _o(d)(2, 4, 5))]),
    OpEntry("dot", ember.dot, _vec_samples, lambda a, b: np.asarray(np.dot(a, b)), dtypes=MM, aliases=("Tensor.dot",),
            errors=lambda d: [err(RuntimeError, "inconsistent tensor size, expected tensor \\[3\\] and src \\[4\\]",
                                  _o(d)(3), _o(d)(4)),
                              err(RuntimeError, "1D tensors expected, but got 2D and 1D tensors", _o(d)(3, 1), _o(d)(3)),
                              err(RuntimeError, "dot : expected both vectors to have same dtype",
                                  _o(d)(3), _o(d)(3, dtype=ember.float64))]),
    OpEntry("vdot", ember.vdot, _vec_samples, lambda a, b: np.asarray(np.vdot(a, b)), dtypes=MM, aliases=("Tensor.vdot",),
            errors=lambda d: [err(RuntimeError, "inconsistent tensor size", _o(d)(3), _o(d)(4))],
            note="real dtypes only: vdot == dot there"),
    OpEntry("mv", ember.mv, _mv_samples, np.matmul, dtypes=MM, aliases=("Tensor.mv",),
            errors=lambda d: [err(RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)",
                                  _o(d)(2, 3), _o(d)(4)),
                              err(RuntimeError, "vector \\+ matrix @ vector expected, got 1, 2, 2",
                                  _o(d)(2, 3), _o(d)(3, 1))]),
    OpEntry("outer", ember.outer, _outer_samples, np.outer, dtypes=MM, aliases=("Tensor.outer", "ger", "Tensor.ger"),
            errors=lambda d: [err(RuntimeError, "outer: Expected 1-D argument self, but got 2-D", _o(d)(2, 3), _o(d)(4))]),
    OpEntry("linalg.cross", ember.linalg.cross, _cross_samples, _cross_ref, dtypes=MM,
            errors=lambda d: [err(RuntimeError, "linalg.cross: inputs dimension .* must have length 3. Got 2 and 2",
                                  _o(d)(3, 2), _o(d)(3, 2)),
                              err(RuntimeError, r"size of tensor a \(2\) must match the size of tensor b \(4\)",
                                  _o(d)(2, 3), _o(d)(4, 3)),
                              err(RuntimeError, "linalg.cross: inputs must have the same number of dimensions",
                                  _o(d)(2, 1, 3), _o(d)(5, 3))]),
]
