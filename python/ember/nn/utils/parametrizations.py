"""Parametrizations built on nn.utils.parametrize, as torch.nn.utils.parametrizations:
``orthogonal``, ``weight_norm`` and ``spectral_norm``."""
from __future__ import annotations

import importlib
from enum import Enum, auto

from ... import _C
from ... import _ops as _E
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _is_conv_transpose, _normalize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]

Tensor = _C.Tensor


# ---- orthogonal ---------------------------------------------------------------------------

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _eye_like_batch(x, n):
    eye = _C.eye(n, dtype=x.dtype, device=x.device)
    return eye.expand(*x.shape[:-2], n, n) if x.dim() > 2 else eye


def _householder_product(a, tau):
    """H_1 ... H_k with H_i = I - tau_i v_i v_i^T, v_i = (0, ..., 0, 1, a[i+1:, i]):
    the first k columns of the product (torch.linalg.householder_product), from ember ops."""
    n, k = a.shape[-2], a.shape[-1]
    rows = _C.arange(n, device=a.device)
    q = _eye_like_batch(a, n)
    for i in range(k):
        col = a[..., :, i]
        v = _E.where(rows > i, col, (rows == i).to(a.dtype))
        qv = (q @ v.unsqueeze(-1))
        q = q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * (qv @ v.unsqueeze(-2))
    return q[..., :, :k]


def _linalg():
    return importlib.import_module("ember.linalg")  # the Python module, not _C.linalg


def _make_orthogonal(a):
    """The Q of A = QR with diag(R) >= 0 (batched)."""
    q, r = _linalg().qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _geqrf_form(q_in):
    """(A, tau) as LAPACK's geqrf stores a QR: R on and above the diagonal, the
    reflectors (scaled to a leading 1) below it."""
    return _C._geqrf(q_in)


def _is_orthogonal(q, eps=None):
    n, k = q.shape[-2], q.shape[-1]
    eye = _C.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * (2.220446049250313e-16 if q.dtype == _C.float64 else 1.1920928955078125e-07)
    return bool(((q.mT @ q) - eye).abs().le(eps).all().item())


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _C.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], -1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _linalg().matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                eye = _C.eye(n, dtype=A.dtype, device=A.device)
                Q = _linalg().solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = _householder_product(A, tau)
            # X's diagonal holds the signs (+-1) of R's diagonal; not differentiated.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().to(Q.dtype).unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                              "Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf_form(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                signs = diag.sign() * _E.where(tau == 0.0, -_C.ones_like(tau), _C.ones_like(tau))
                A = A.triu(1) + A.tril(-1) + _eye_like_batch(A, n)[..., :k] * signs.unsqueeze(-2)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _C.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_C.cat([Q, N], -1))
            self.base = Q
            neg_id = _C.zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    r"""Constrains ``module.<name>`` (a matrix or batch of matrices) to be orthogonal
    (semi-orthogonal when not square) through ``parametrize``. ``orthogonal_map``:
    "matrix_exp" (default for square), "cayley" or "householder" (default otherwise). With
    ``use_trivialization`` the
    parametrization is ``base @ map(X)`` and assigning to the weight resets ``base``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ------------------------------------------------------------------------


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    r"""Reparametrizes ``module.<name>`` as ``g * v / ||v||`` through
    ``parametrize``: ``parametrizations.<name>.original0`` is g (the norm over every dim
    but ``dim``) and ``original1`` is v. Loading a legacy state dict with ``<name>_g`` /
    ``<name>_v`` keys works."""
    _weight_norm_module = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm_module, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", _normalize(u, self.eps))
            self.register_buffer("_v", _normalize(v, self.eps))
            # Start from a good estimate of the top singular vectors.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        assert weight.ndim > 1
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        # reshape, not flatten(1): ember's flatten drops autograd when it is a no-op (2-D input)
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, weight_mat, n_power_iterations):
        # In place, so the buffers keep their identity (torch's out=).
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(_C.mv(weight_mat, self._v), self.eps))
                self._v.copy_(_normalize(_C.mv(weight_mat.t(), self._u), self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _C.vdot(u, _C.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    r"""Divides ``module.<name>`` by its spectral norm, estimated by power iteration
    (``n_power_iterations`` per training forward; buffers ``_u``/``_v`` in
    ``parametrizations.<name>.0``), through ``parametrize``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
