"""ember.sparse: the functions of sparse COO tensors (``torch.sparse``).

A sparse COO tensor (``layout == ember.sparse_coo``) stores the indices of its specified
elements and their values; ``ember.sparse_coo_tensor`` builds one, ``Tensor.to_sparse``
converts a strided tensor. The products here give the sparse input a sparse gradient on
its pattern (``ember.mm`` and ``@`` give it a strided one, as PyTorch's).
"""
from .. import _C

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm"]


def mm(mat1, mat2, reduce=None):
    """``mat1 @ mat2`` with a sparse operand: sparse x strided and strided x sparse are
    strided, sparse x sparse is sparse. The gradient of a sparse operand is sparse, on its
    pattern (``torch.sparse.mm``)."""
    if reduce is not None:
        raise NotImplementedError("sparse.mm: reduce= applies to sparse CSR tensors, which "
                                  "ember does not have")
    return _C._sparse_mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` and strided ``mat``,
    ``mat2``; the sparse operand's gradient is sparse on its pattern."""
    return _C._sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's elements over ``dim`` (all by default): strided when
    every sparse dim is summed, else sparse."""
    if isinstance(dim, int):
        dim = (dim,)
    return _C._sparse_sum(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """Softmax over ``dim`` of a sparse tensor's specified elements (unspecified ones count
    as -inf, so they stay unspecified); the result has the input's coalesced pattern."""
    return _C._sparse_softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log of ``ember.sparse.softmax``, computed stably."""
    return _C._sparse_log_softmax(input, dim, dtype=dtype)


spmm = _C.spmm
