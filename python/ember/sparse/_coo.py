"""ember.sparse_coo_tensor: argument conversion; the checks and the tensor are C++
(ops/sparse.cpp)."""
from .. import _C


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values[i]`` at ``indices[:, i]`` (indices: int64
    [sparse_dim, nnz]; values: [nnz, *dense sizes]). Without ``size`` each sparse size is
    its largest index + 1. Repeated indices are allowed until ``coalesce()`` sums them.
    Index bounds are always checked; ``check_invariants=True`` also checks an
    ``is_coalesced=True`` claim."""
    import ember
    if pin_memory:
        raise RuntimeError("Only dense CPU tensors can be pinned")
    if not isinstance(indices, _C.Tensor):
        indices = ember.tensor(indices, dtype=ember.int64, device=device)
    if not isinstance(values, _C.Tensor):
        values = ember.tensor(values, dtype=dtype, device=device)
    if size is not None and not isinstance(size, (tuple, list)):
        size = tuple(size)
    t = _C._sparse_coo_tensor(indices, values, size, dtype, device, check_invariants,
                              is_coalesced)
    if requires_grad:
        t.requires_grad_(True)
    return t
