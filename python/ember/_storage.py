"""Tensor.storage() and Tensor.untyped_storage(): the memory blob behind a tensor.

A storage object wraps a flat 1-D view over the whole allocation, so it shares
memory (and the version counter) with every tensor on it.
"""
from . import _C


class UntypedStorage:
    """The bytes behind a tensor; ``data_ptr()`` is the start of the allocation."""

    def __init__(self, flat):
        self._view = flat  # 1-D view over the whole storage when it was taken

    @property
    def _flat(self):
        """The 1-D view over the whole storage, retaken when the storage has grown since
        (resize_ grows a shared storage in place, Note [Resizing a shared storage])."""
        v = self._view
        if v._storage_nbytes() // v.element_size() != v.numel():
            v = self._view = v._storage_view(type(self) is UntypedStorage)
        return v

    def data_ptr(self) -> int:
        return self._flat._storage_ptr()

    def nbytes(self) -> int:
        return self._flat._storage_nbytes()

    def size(self) -> int:
        return self._flat.numel()

    def __len__(self) -> int:
        return self._flat.numel()

    def element_size(self) -> int:
        return self._flat.element_size()

    @property
    def device(self):
        return self._flat.device

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._flat[i].tolist()
        return self._flat[i].item()

    def __setitem__(self, i, v):
        self._flat[i] = v

    def tolist(self):
        return self._flat.tolist()

    def fill_(self, v):
        self._flat.fill_(v)
        return self

    def _tensor(self):
        """A tensor over the storage (the flat view)."""
        return self._flat

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self._flat.tolist())
        return f"{body}\n[ember.{type(self).__name__}(device={self.device}) of size {len(self)}]"


class TypedStorage(UntypedStorage):
    """The storage seen as elements of the tensor's dtype (``Tensor.storage()``)."""

    @property
    def dtype(self):
        return self._flat.dtype

    def untyped(self):
        return UntypedStorage(self._flat._storage_view(True))

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self._flat.tolist())
        name = _C._legacy_type_name(self._flat) if hasattr(_C, "_legacy_type_name") else str(self.dtype)
        return f"{body}\n[{name} of size {len(self)}]"


def _no_sparse_storage(t):
    if t.is_sparse:
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")


def _storage(self):
    _no_sparse_storage(self)
    return TypedStorage(self._storage_view(False))


def _untyped_storage(self):
    _no_sparse_storage(self)
    return UntypedStorage(self._storage_view(True))


_C.Tensor.storage = _storage
_C.Tensor.untyped_storage = _untyped_storage


class layout:
    """Memory layout of a tensor: ``ember.strided`` or ``ember.sparse_coo``."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"ember.{self._name}"

    def __reduce__(self):
        # Pickled (and deep-copied) as the module global of its name, so the singleton
        # stays itself: copy.deepcopy(ember.strided) is ember.strided.
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
_LAYOUTS = (strided, sparse_coo)  # indexed by Tensor._layout_id (core/tensor.h's Layout)
_C.Tensor.layout = property(lambda self: _LAYOUTS[self._layout_id],
                            doc="The memory layout: ember.strided or ember.sparse_coo.")


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    """A copy on the GPU (``device`` index or ember.device; default the current one)."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return self.to(device, non_blocking=non_blocking)


_C.Tensor.cuda = _cuda
