"""ember.linalg: the linear-algebra names PyTorch keeps under torch.linalg."""
from . import _C

matmul = _C.matmul


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (all elements when None)."""
    return _C.norm(x, ord, dim, keepdim, dtype=dtype)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector norm (2 by default, or ``ord``); 'fro' for the Frobenius norm of matrices."""
    return _C.norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm over the last two dims (other matrix norms are not supported)."""
    if ord != "fro":
        raise RuntimeError(f"linalg.matrix_norm: ord={ord!r} is not supported by ember; use 'fro'")
    return _C.norm(x, "fro", dim, keepdim, dtype=dtype)
