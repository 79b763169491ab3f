"""ember.linalg: the linear-algebra names PyTorch keeps under torch.linalg.

The factorizations and solvers run through LAPACK (csrc/ember/ops/linalg_lapack.cpp);
this module only re-exports them and normalizes a few arguments."""
from . import _C

_L = _C._linalg

matmul = _C.matmul
LinAlgError = _L.LinAlgError
solve = _L.solve
solve_triangular = _L.solve_triangular
inv = _L.inv
inv_ex = _L.inv_ex
det = _L.det
slogdet = _L.slogdet
cholesky = _L.cholesky
cholesky_ex = _L.cholesky_ex
svd = _L.svd
svdvals = _L.svdvals
eigh = _L.eigh
eigvalsh = _L.eigvalsh
qr = _L.qr
lu_factor = _L.lu_factor
lu_solve = _L.lu_solve
pinv = _L.pinv
matrix_rank = _L.matrix_rank
matrix_norm = _L.matrix_norm
cond = _L.cond
lstsq = _L.lstsq
multi_dot = _L.multi_dot
vecdot = _L.vecdot


def matrix_power(A, n, *, out=None):
    """A to the integer power n (negative n inverts first)."""
    if n < 0:
        A, n = _L.inv(A), -n
    return _C.matrix_power(A, n, out=out)


def cross(input, other, *, dim=-1, out=None):
    """The cross product along ``dim`` (default the last dim, as torch.linalg.cross)."""
    return _C.cross(input, other, dim, out=out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices of A (a view), as torch.linalg.diagonal."""
    return _C.diagonal(A, offset, dim1, dim2)


def eig(A, *, out=None):
    raise NotImplementedError("ember.linalg.eig: ember has no complex dtypes, and the eigenvalues of a general real "
                              "matrix are complex; use linalg.eigh for symmetric matrices")


def eigvals(A, *, out=None):
    raise NotImplementedError("ember.linalg.eigvals: ember has no complex dtypes, and the eigenvalues of a general "
                              "real matrix are complex; use linalg.eigvalsh for symmetric matrices")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (all elements when None)."""
    return _C.norm(x, ord, dim, keepdim, dtype=dtype)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector norm (2 by default, or ``ord``); a matrix norm when ``dim`` is a 2-tuple, or
    when ``x`` is 2-D with ``ord`` given and ``dim`` None."""
    if isinstance(dim, (tuple, list)) and len(dim) == 2 or (dim is None and ord is not None and x.dim() == 2):
        return _L.matrix_norm(x, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim,
                              dtype=dtype)
    return _C.norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


matrix_exp = _C.matrix_exp
