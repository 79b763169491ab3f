"""PyTorch's checkpoint format, read (and written) without importing torch.

Note [PyTorch checkpoints]
``torch.save`` (PyTorch >= 1.6) writes a zip archive: ``<name>/data.pkl`` pickles the
object with every tensor storage replaced by a persistent id
``('storage', torch.<T>Storage, key, location, numel)`` whose bytes are the record
``<name>/data/<key>``; ``<name>/byteorder`` says "little" or "big" and ``<name>/version``
the format version. Tensors are rebuilt by ``torch._utils._rebuild_tensor_v2(storage,
offset, size, stride, requires_grad, hooks)`` (``_v3`` adds a dtype over untyped storages,
``_rebuild_parameter`` wraps a Parameter), dtypes are the globals ``torch.float32``...

``load_zip`` reads that with the weights-only unpickler of ember (Note [Weights-only
unpickling] in _weights_only.py): each of those torch names maps to an ember stand-in that
validates its arguments (a storage record of the declared size, views inside their
storage), so no torch code is needed and none from the file runs. Tensors sharing a
storage load as views of one ember tensor. ``save_zip`` writes the same format, so
``torch.load`` reads what ember saves with ``ember.save(obj, f, format="torch")``.
"""
from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np

from . import _C
from . import _weights_only as wo

ZIP_MAGIC = b"PK\x03\x04"
# torch.save's legacy (non-zip) format starts by pickling this number (protocol 2).
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")

# torch.<X>Storage -> (ember dtype name, NumPy dtype of its raw bytes)
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "UntypedStorage": "uint8",
}
# torch dtype names (and their aliases) -> ember dtype names
_DTYPES = {
    "float64": "float64", "double": "float64", "float32": "float32", "float": "float32",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}
_NP = {"bfloat16": "<i2", "bool": "?", "uint8": "u1", "int8": "i1", "int16": "<i2",
       "int32": "<i4", "int64": "<i8", "float16": "<f2", "float32": "<f4", "float64": "<f8"}


def _bad(msg):
    return RuntimeError(f"ember.load: invalid PyTorch checkpoint: {msg}")


def is_legacy(head):
    return head.startswith(_LEGACY_MAGIC)


class _StorageType:
    """Stands in for torch.<X>Storage in persistent ids."""

    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


class _Storage:
    """A loaded storage record: a flat CPU ember tensor, and where it was saved from."""

    def __init__(self, flat, location):
        self.flat = flat
        self.location = location


class _Parameter:
    """Stands in for torch.nn.Parameter (as the class _rebuild_from_type_v2 is given)."""

    def __new__(cls, data=None, requires_grad=True):
        return _as_parameter(data, requires_grad)


def _as_parameter(data, requires_grad):
    from .nn.parameter import Parameter  # noqa: PLC0415
    if not isinstance(data, _C.Tensor):
        raise _bad(f"a Parameter's data must be a tensor, got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _int_tuple(v, what):
    if not isinstance(v, (tuple, list)) or len(v) > 64 or not all(
            type(i) is int and i >= 0 for i in v):
        raise _bad(f"{what} must be a tuple of at most 64 non-negative ints, got {v!r}")
    return tuple(v)


class _Loader:
    """The state of one load_zip: the archive, its storages and the map_location."""

    def __init__(self, zf, prefix, restore, big_endian):
        self.zf, self.prefix, self.restore = zf, prefix, restore
        self.big_endian = big_endian
        self.storages = {}
        self.restored = {}  # id(storage) -> its flat tensor moved by map_location

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _bad(f"unsupported persistent id {pid!r:.80}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise _bad(f"unsupported storage type {stype!r:.80}")
        if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int:
            raise _bad(f"malformed storage id {pid!r:.120}")
        if key in self.storages:
            return self.storages[key]
        name = f"{self.prefix}data/{key}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise _bad(f"storage record {name!r} is missing") from None
        dt = np.dtype(_NP[stype.dtype])
        if numel < 0 or info.file_size != numel * dt.itemsize:
            raise _bad(f"storage record {name!r} holds {info.file_size} bytes, but the pickle "
                       f"declares {numel} elements of {stype.name} ({numel * dt.itemsize} bytes)")
        arr = np.empty(numel, dtype=dt)
        with self.zf.open(info) as rec:
            buf = memoryview(arr.view(np.uint8))
            got = 0
            while got < len(buf):
                k = rec.readinto(buf[got:])
                if not k:
                    raise _bad(f"storage record {name!r} is truncated")
                got += k
        if self.big_endian and dt.itemsize > 1:
            arr = arr.byteswap()
        t = _C.from_numpy(arr)
        if stype.dtype == "bfloat16":
            t = t.view(_C.bfloat16)
        st = _Storage(t, location)
        self.storages[key] = st
        return st

    def flat_on_device(self, st):
        """The storage's flat tensor after map_location (once per storage, so tensors that
        shared a storage still share it)."""
        if id(st) not in self.restored:
            self.restored[id(st)] = self.restore(st.flat, st.location)
        return self.restored[id(st)]

    def rebuild(self, storage, offset, size, stride, requires_grad=False, hooks=None,
                metadata=None, dtype=None):
        if not isinstance(storage, _Storage):
            raise _bad(f"a tensor's storage must be a storage record, got {type(storage).__name__}")
        size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
        if len(size) != len(stride) or type(offset) is not int or offset < 0:
            raise _bad(f"invalid tensor geometry: size {size}, stride {stride}, offset {offset!r}")
        flat = self.flat_on_device(storage)
        if dtype is not None and flat.dtype != dtype:
            itemsize = np.dtype(_NP[str(dtype).rpartition(".")[2]]).itemsize
            if flat.dtype != _C.uint8 or flat.numel() % itemsize:
                raise _bad(f"cannot view a {flat.dtype} storage as {dtype}")
            flat = flat.view(dtype)
        numel = 1
        for n in size:
            numel *= n
        if numel == 0:
            t = flat.new_empty(size)
        else:
            extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
            if extent > flat.numel():
                raise _bad(f"a tensor of size {size}, stride {stride}, offset {offset} reaches "
                           f"element {extent - 1} of a storage of {flat.numel()} elements")
            t = flat.as_strided(size, stride, offset)
        if requires_grad:
            if not t.is_floating_point():
                raise _bad("only floating point tensors can require gradients")
            t = t.detach().requires_grad_(True)
        return t


def _dtype_global(name):
    return getattr(_C, _DTYPES[name])


def _device(*args):
    if len(args) == 1 and isinstance(args[0], str):
        return _C.device(args[0])
    if len(args) == 2 and isinstance(args[0], str) and (args[1] is None or type(args[1]) is int):
        return _C.device(args[0], args[1])
    raise _bad(f"invalid torch.device arguments {args!r:.80}")


def _layout(name):
    if name == "torch.strided":
        from ._storage import strided  # noqa: PLC0415
        return strided
    raise _bad(f"tensors of layout {name!r} are not supported (only strided tensors)")


def _unsupported_tensor(kind):
    def f(*args, **kwargs):
        raise _bad(f"{kind} tensors are not supported by ember")
    return f


def _allowed(loader):
    from ._size import Size  # noqa: PLC0415

    def rebuild_v1(storage, offset, size, stride):
        return loader.rebuild(storage, offset, size, stride)

    def rebuild_v2(storage, offset, size, stride, requires_grad, hooks, metadata=None):
        return loader.rebuild(storage, offset, size, stride, requires_grad)

    def rebuild_v3(storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
        if not isinstance(dtype, _C.dtype):
            raise _bad(f"invalid dtype {dtype!r:.40}")
        return loader.rebuild(storage, offset, size, stride, requires_grad, dtype=dtype)

    def rebuild_parameter(data, requires_grad, hooks, state=None):
        return _as_parameter(data, requires_grad)

    def rebuild_from_type_v2(func, new_type, args, state):
        if not isinstance(args, tuple):
            raise _bad("_rebuild_from_type_v2 expects a tuple of arguments")
        t = func(*args)
        if new_type is _Parameter:
            t = _as_parameter(t, t.requires_grad)
        return t

    allowed = dict(wo.base_allowed())
    allowed.update({
        "torch._utils._rebuild_tensor": rebuild_v1,
        "torch._utils._rebuild_tensor_v2": rebuild_v2,
        "torch._utils._rebuild_tensor_v3": rebuild_v3,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.nn.parameter.Parameter": _Parameter,
        "torch.Tensor": _C.Tensor,
        "torch._tensor.Tensor": _C.Tensor,
        "torch.Size": Size,
        "torch.device": _device,
        "torch.serialization._get_layout": _layout,
        "torch._utils._rebuild_sparse_tensor": _unsupported_tensor("sparse"),
        "torch._utils._rebuild_qtensor": _unsupported_tensor("quantized"),
        "torch._utils._rebuild_meta_tensor_no_storage": _unsupported_tensor("meta"),
        "torch._utils._rebuild_wrapper_subclass": _unsupported_tensor("wrapper-subclass"),
    })
    for name in _STORAGE_DTYPES:
        allowed[f"torch.{name}"] = _StorageType(name)
    allowed["torch.storage.UntypedStorage"] = _StorageType("UntypedStorage")
    for name in _DTYPES:
        allowed[f"torch.{name}"] = _dtype_global(name)
    return allowed


def _archive_prefix(zf):
    for n in zf.namelist():
        if n.endswith("data.pkl") and n.count("/") == 1:
            return n[: -len("data.pkl")]
    raise _bad("no <archive>/data.pkl record (not a torch.save zip file?)")


def load_zip(fh, restore, weights_only):
    """The object of a torch.save zip checkpoint, tensors as ember tensors (Note [PyTorch
    checkpoints]). `restore(tensor, location)` applies map_location."""
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise _bad(f"not a readable zip archive ({e})") from None
    with zf:
        prefix = _archive_prefix(zf)
        names = set(zf.namelist())
        big = False
        if prefix + "byteorder" in names:
            order = zf.read(prefix + "byteorder").strip()
            if order not in (b"little", b"big"):
                raise _bad(f"unknown byteorder {order!r:.20}")
            big = order == b"big"
        loader = _Loader(zf, prefix, restore, big)
        info = zf.getinfo(prefix + "data.pkl")
        if info.file_size > 1 << 31:
            raise _bad("data.pkl is larger than 2 GiB")
        data = zf.read(info)
        return wo.load(io.BytesIO(data), _allowed(loader), unrestricted=not weights_only,
                       persistent_load=loader.persistent_load, encoding="utf-8")


# ---- writing --------------------------------------------------------------------------------

class _Global(type):
    """A class standing for a torch global in the pickle ember writes (GLOBAL module name)."""


def _torch_global(module, name):
    return _Global(name, (), {"module": module, "qualname": name})


_G_REBUILD_V2 = _torch_global("torch._utils", "_rebuild_tensor_v2")
_G_REBUILD_PARAM = _torch_global("torch._utils", "_rebuild_parameter")
_G_SIZE = _torch_global("torch", "Size")
_G_DEVICE = _torch_global("torch", "device")
_G_STORAGE = {dt: _torch_global("torch", st) for st, dt in _STORAGE_DTYPES.items()
              if st != "UntypedStorage"}


class _StorageRef:
    def __init__(self, key, dtype, location, numel):
        self.key, self.dtype, self.location, self.numel = key, dtype, location, numel


class _TorchPickler(pickle._Pickler):
    """Protocol 2 pickle of ember objects in PyTorch's vocabulary."""

    def __init__(self, file, writer):
        super().__init__(file, protocol=2)
        self.writer = writer

    def save_global(self, obj, name=None):
        if isinstance(obj, _Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.qualname}\n".encode())
            self.memoize(obj)
            return
        if isinstance(obj, _C.dtype):  # torch.float32 ... (reducer_override gave its name)
            self.write(pickle.GLOBAL + f"torch\n{name}\n".encode())
            self.memoize(obj)
            return
        super().save_global(obj, name)

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _G_STORAGE[obj.dtype], obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        from ._size import Size  # noqa: PLC0415
        if isinstance(obj, _C.Tensor):
            return self.writer.reduce_tensor(obj)
        if isinstance(obj, _C.dtype):
            return str(obj).rpartition(".")[2]  # saved as the global torch.<name>
        if isinstance(obj, _C.device):
            return (_G_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if isinstance(obj, Size):
            return (_G_SIZE, (tuple(obj),))
        return NotImplemented


class _Writer:
    def __init__(self):
        self.storages = {}  # storage key -> (_StorageRef, flat tensor)

    def reduce_tensor(self, t):
        from ._tensor import _raw_numpy  # noqa: PLC0415
        from .nn.parameter import Parameter  # noqa: PLC0415
        if isinstance(t, Parameter):
            return (_G_REBUILD_PARAM, (t.detach(), t.requires_grad, collections.OrderedDict()))
        dtype = str(t.dtype).rpartition(".")[2]
        skey = (t._storage_ptr(), dtype, str(t.device))
        if skey not in self.storages:
            flat = t.detach()._storage_view(False)
            ref = _StorageRef(str(len(self.storages)), dtype, str(t.device), flat.numel())
            self.storages[skey] = (ref, _raw_numpy(flat))
        ref = self.storages[skey][0]
        return (_G_REBUILD_V2, (ref, t.storage_offset(), tuple(t.shape), tuple(t.stride()),
                                t.requires_grad, collections.OrderedDict()))


def save_zip(obj, fh, archive="archive"):
    """Writes `obj` in torch.save's zip format (Note [PyTorch checkpoints])."""
    writer = _Writer()
    buf = io.BytesIO()
    _TorchPickler(buf, writer).dump(obj)
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{archive}/data.pkl", buf.getvalue())
        zf.writestr(f"{archive}/byteorder", b"little")
        for ref, arr in writer.storages.values():
            zf.writestr(f"{archive}/data/{ref.key}", memoryview(arr.reshape(-1).view(np.uint8)))
        zf.writestr(f"{archive}/version", b"3\n")
    return fh


def describe(head):
    """A sentence naming a non-ember file format from its first bytes, or None."""
    if is_legacy(head):
        return ("a PyTorch checkpoint in the legacy format of torch.save before PyTorch 1.6 "
                "(or _use_new_zipfile_serialization=False); ember reads PyTorch's zip format: "
                "re-save it in a current PyTorch with torch.save(torch.load(f), f2)")
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return ("a plain Python pickle, not an ember or PyTorch checkpoint; if you trust its "
                "source, read it with pickle.load")
    if head[:2] == b"\x1f\x8b" or head[257:262] == b"ustar":
        return "a gzip or tar archive (the format of torch.save before PyTorch 0.4?), not a checkpoint ember reads"
    return None

