"""ember.save / ember.load: a safe, code-free file format.

Note [File format]
The default format is safetensors-compatible:

    8 bytes   N, the header length (unsigned, little-endian)
    N bytes   a UTF-8 JSON object: {"__metadata__": {str: str},
              "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
              (padded with spaces to a multiple of 8 bytes)
    rest      the tensors' raw little-endian bytes; offsets are relative to this section,
              sorted, contiguous and covering it exactly

ember puts the saved object's container structure (dicts, lists, tuples, plain values and
references to tensor names) as JSON in ``__metadata__["structure"]``. Nothing in the file
is code. ``load`` validates every field before allocating anything, so a malformed or
hostile file raises RuntimeError naming the problem instead of crashing or allocating what
a lying header claims. Plain safetensors files load as a dict of tensors.

Objects the format cannot describe are pickled instead (``EMBER_PICKLE_MAGIC`` + a pickle);
loading such a file runs code from it and therefore needs an explicit ``weights_only=False``.
"""
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import struct

import numpy as np

from . import _C
from ._tensor import _raw_numpy, _rebuild_tensor

__all__ = ["save", "load"]

EMBER_PICKLE_MAGIC = b"EMBERPKL"
MAX_HEADER_BYTES = 100 * 1024 * 1024
MAX_NESTING = 200
MAX_NDIM = 64
FORMAT_NAME = "ember"
FORMAT_VERSION = "1"

# safetensors dtype codes <-> ember dtype names (the whitelist)
_CODE_TO_DTYPE = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
    "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
}
_DTYPE_TO_CODE = {v: k for k, v in _CODE_TO_DTYPE.items()}
_ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
             "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def _bad(msg):
    return RuntimeError(f"ember.load: invalid file: {msg}")


def _dtype_name(t):
    return str(t.dtype).rpartition(".")[2]


# ---- save -------------------------------------------------------------------------------

class _NotRepresentable(Exception):
    pass


class _Encoder:
    """Turns an object into tagged JSON plus a list of (name, tensor)."""

    def __init__(self, shared_keys=()):
        self.tensors = []
        self.names = set()
        self.seen = {}  # id(tensor) -> its structure entry: one tensor saved twice loads as one
        # Note [Shared storages]: tensors that share a storage with another saved tensor are
        # written as one flat copy of the storage plus (offset, shape, stride) per view, so
        # they load sharing memory again, as torch.load gives back.
        self.shared_keys = set(shared_keys)
        self.storages = {}  # storage key -> name of its flat tensor

    def name_for(self, path):
        base = ".".join(path) or "tensor"
        name, k = base, 1
        while name in self.names or name == "__metadata__":
            name, k = f"{base}#{k}", k + 1
        self.names.add(name)
        return name

    def encode(self, x, path, depth=0, key=False):
        if depth > MAX_NESTING:
            raise _NotRepresentable(f"nesting deeper than {MAX_NESTING} levels")
        if isinstance(x, _C.Tensor):
            if key:
                raise _NotRepresentable("tensors as dict keys")
            if id(x) in self.seen:
                return self.seen[id(x)]
            if x.is_sparse:
                entry = {"sparse_coo": {
                    "indices": self.encode(x._indices(), path + ["indices"], depth + 1),
                    "values": self.encode(x._values(), path + ["values"], depth + 1),
                    "size": list(x.shape), "coalesced": x.is_coalesced(),
                    "requires_grad": x.requires_grad}}
                self.seen[id(x)] = entry
                return entry
            skey = _storage_key(x)
            if skey in self.shared_keys:
                if skey not in self.storages:
                    self.storages[skey] = self.name_for(path + ["storage"])
                    self.tensors.append((self.storages[skey], x._storage_view(False)))
                entry = {"view": self.storages[skey], "device": str(x.device),
                         "offset": x.storage_offset(), "shape": list(x.shape),
                         "stride": list(x.stride())}
            else:
                name = self.name_for(path)
                self.tensors.append((name, x))
                entry = {"tensor": name, "device": str(x.device)}
            if x.requires_grad:
                entry["requires_grad"] = True  # loads as a leaf that requires grad, as torch
            self.seen[id(x)] = entry
            return entry
        if x is None or isinstance(x, bool):
            return x
        if isinstance(x, str):
            return str(x)
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return {"float": repr(float(x))}
        if isinstance(x, tuple) and type(x) is tuple:
            return {"tuple": [self.encode(v, path + [str(i)], depth + 1, key) for i, v in enumerate(x)]}
        if key:
            raise _NotRepresentable(f"dict keys of type {type(x).__name__}")
        if type(x) is list:
            return {"list": [self.encode(v, path + [str(i)], depth + 1) for i, v in enumerate(x)]}
        if type(x) in (dict, collections.OrderedDict):
            items = [[self.encode(k, path, depth + 1, key=True),
                      self.encode(v, path + [str(k)], depth + 1)] for k, v in x.items()]
            return {"odict" if type(x) is collections.OrderedDict else "dict": items}
        raise _NotRepresentable(f"objects of type {type(x).__name__}")


def _storage_key(t):
    return (t._storage_ptr(), str(t.dtype), str(t.device))


def _walk_tensors(x, depth=0):
    """The tensors inside the containers ``save`` can describe (for Note [Shared storages])."""
    if depth > MAX_NESTING:
        return
    if isinstance(x, _C.Tensor):
        if x.is_sparse:  # saved as its indices and values
            yield x._indices()
            yield x._values()
        else:
            yield x
    elif type(x) in (list, tuple):
        for v in x:
            yield from _walk_tensors(v, depth + 1)
    elif type(x) in (dict, collections.OrderedDict):
        for v in x.values():
            yield from _walk_tensors(v, depth + 1)


def _shared_storage_keys(obj):
    """Keys of the storages that two or more distinct saved tensors live on."""
    first, shared = {}, set()
    for t in _walk_tensors(obj):
        if t.numel() == 0:
            continue
        k = _storage_key(t)
        if k in first and first[k] is not t:
            shared.add(k)
        first.setdefault(k, t)
    return shared


def _open_for(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(os.fspath(f), mode), True
    if "w" in mode and not hasattr(f, "write"):
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {type(f).__name__}")
    if "r" in mode and not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got {type(f).__name__}")
    return f, False


def save(obj, f, pickle_protocol=2):
    """Saves tensors and nested dicts/lists/tuples of tensors and plain values to ``f``
    (a path or a binary file object) in the safe format of Note [File format].

    Each tensor's own elements are written (a view saves just its elements). Objects the
    format cannot hold (arbitrary classes) are pickled; such files then load only with
    ``ember.load(f, weights_only=False)``.
    """
    enc = _Encoder(_shared_storage_keys(obj))
    try:
        structure = enc.encode(obj, [])
    except _NotRepresentable:
        return _save_pickle(obj, f, pickle_protocol)

    header = {"__metadata__": {"format": FORMAT_NAME, "version": FORMAT_VERSION,
                               "structure": json.dumps(structure, separators=(",", ":"))}}
    offset = 0
    for name, t in enc.tensors:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _DTYPE_TO_CODE[_dtype_name(t)], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)  # 8-byte alignment of the data section, as safetensors
    fh, owned = _open_for(f, "wb")
    try:
        fh.write(struct.pack("<Q", len(hb)))
        fh.write(hb)
        for _, t in enc.tensors:  # one tensor materialized at a time
            arr = _raw_numpy(t)
            if arr.size:
                fh.write(memoryview(arr.reshape(-1).view(np.uint8)))
    finally:
        if owned:
            fh.close()


def _save_pickle(obj, f, protocol):
    fh, owned = _open_for(f, "wb")
    try:
        fh.write(EMBER_PICKLE_MAGIC)
        pickle.dump(obj, fh, protocol=protocol)
    finally:
        if owned:
            fh.close()


# ---- load -------------------------------------------------------------------------------

def _read_exact(fh, n, what):
    chunks, got = [], 0
    while got < n:
        b = fh.read(n - got)
        if not b:
            raise _bad(f"truncated while reading {what} ({got} of {n} bytes present)")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _read_into(fh, arr, name):
    buf = memoryview(arr.reshape(-1).view(np.uint8))
    n, got = len(buf), 0
    readinto = getattr(fh, "readinto", None)
    while got < n:
        if readinto is not None:
            k = readinto(buf[got:])
        else:
            b = fh.read(n - got)
            k = len(b)
            buf[got:got + k] = b
        if not k:
            raise _bad(f"truncated in the data of tensor '{name}' ({got} of {n} bytes present)")
        got += k


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _bad(f"duplicate key {k!r} in the header")
        d[k] = v
    return d


def _reject_constant(c):
    raise _bad(f"non-finite number {c} in the header")


def _parse_json(text, what):
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except RecursionError:  # before RuntimeError, its base class
        raise _bad(f"{what} is nested too deeply") from None
    except RuntimeError:
        raise
    except ValueError as e:
        raise _bad(f"{what} is not valid JSON ({e})") from None


def _is_int(x):
    return type(x) is int


def _validate_entry(name, e):
    if not isinstance(e, dict):
        raise _bad(f"header entry '{name}' must be an object, got {type(e).__name__}")
    keys = set(e)
    if keys != {"dtype", "shape", "data_offsets"}:
        missing = sorted({"dtype", "shape", "data_offsets"} - keys)
        unknown = sorted(keys - {"dtype", "shape", "data_offsets"})
        raise _bad(f"header entry '{name}' must have exactly the keys dtype, shape, data_offsets"
                   + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    code = e["dtype"]
    if not isinstance(code, str) or code not in _CODE_TO_DTYPE:
        raise _bad(f"tensor '{name}' has unsupported dtype {code!r}; expected one of "
                   f"{sorted(_CODE_TO_DTYPE)}")
    shape = e["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_NDIM:
        raise _bad(f"tensor '{name}': shape must be a list of at most {MAX_NDIM} integers, got {shape!r}")
    numel = 1
    for s in shape:
        if not _is_int(s) or s < 0 or s >= 2 ** 63:
            raise _bad(f"tensor '{name}': shape entries must be non-negative integers, got {shape!r}")
        numel *= s  # Python ints: exact, no overflow
    offs = e["data_offsets"]
    if not (isinstance(offs, list) and len(offs) == 2 and all(_is_int(o) for o in offs)):
        raise _bad(f"tensor '{name}': data_offsets must be a list of two integers, got {offs!r}")
    begin, end = offs
    if not 0 <= begin <= end:
        raise _bad(f"tensor '{name}': data_offsets [{begin}, {end}] must satisfy 0 <= begin <= end")
    dtype = _CODE_TO_DTYPE[code]
    if numel * _ITEMSIZE[dtype] != end - begin:
        raise _bad(f"tensor '{name}': shape {shape} of {dtype} needs {numel * _ITEMSIZE[dtype]} bytes "
                   f"but data_offsets [{begin}, {end}] hold {end - begin}")
    return (begin, end, name, dtype, tuple(shape))


def _read_header(fh, size):
    """Validated (metadata, entries sorted by offset) of a safetensors-style file of `size` bytes."""
    if size < 8:
        raise _bad(f"truncated: {size} bytes, fewer than the 8-byte header length")
    n = struct.unpack("<Q", _read_exact(fh, 8, "the header length"))[0]
    if n > MAX_HEADER_BYTES:
        raise _bad(f"header length {n} exceeds the limit of {MAX_HEADER_BYTES} bytes")
    if n > size - 8:
        raise _bad(f"header length {n} exceeds the {size - 8} bytes that follow it (truncated file?)")
    raw = _read_exact(fh, n, "the header")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(f"header is not valid UTF-8 ({e})") from None
    header = _parse_json(text, "header")
    if not isinstance(header, dict):
        raise _bad(f"header must be a JSON object, got {type(header).__name__}")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict)
                                 and all(isinstance(v, str) for v in meta.values())):
        raise _bad("__metadata__ must be an object mapping strings to strings")
    entries = sorted(_validate_entry(k, v) for k, v in header.items())
    expected = 0
    for begin, end, name, _, _ in entries:
        if begin < expected:
            raise _bad(f"tensor '{name}': data_offsets [{begin}, {end}] overlap the previous tensor "
                       f"(which ends at {expected})")
        if begin > expected:
            raise _bad(f"tensor '{name}': data_offsets start at {begin}, leaving a gap after {expected}")
        expected = end
    data_size = size - 8 - n
    if expected > data_size:
        raise _bad(f"truncated: the tensors need {expected} bytes of data but the file holds {data_size}")
    if expected < data_size:
        raise _bad(f"{data_size - expected} unexpected bytes after the last tensor's data")
    return meta or {}, entries


def _decode(x, tensors, restore, depth=0, memo=None):
    if depth > MAX_NESTING:
        raise _bad(f"structure nested deeper than {MAX_NESTING} levels")
    if memo is None:
        memo = {}
    if x is None or type(x) in (bool, int, str):
        return x
    if not isinstance(x, dict):
        raise _bad(f"unexpected {type(x).__name__} in the structure")
    if set(x) in ({"tensor", "device"}, {"tensor", "device", "requires_grad"}):
        name = x["tensor"]
        if not isinstance(name, str) or name not in tensors:
            raise _bad(f"the structure refers to a tensor {name!r} the header does not describe")
        if not isinstance(x["device"], str):
            raise _bad(f"tensor '{name}': device must be a string")
        requires_grad = x.get("requires_grad", False)
        if not isinstance(requires_grad, bool):
            raise _bad(f"tensor '{name}': requires_grad must be true or false")
        if name not in memo:  # every reference to one saved tensor loads as the same tensor
            t = restore(tensors[name], x["device"])
            if requires_grad:
                if not t.is_floating_point():
                    raise _bad(f"tensor '{name}': only floating point tensors can require grad")
                t = t.detach().requires_grad_(True)
            memo[name] = t
        return memo[name]
    if set(x) - {"requires_grad"} == {"view", "device", "offset", "shape", "stride"}:
        return _decode_view(x, tensors, restore, memo)
    if len(x) != 1:
        raise _bad(f"unexpected object with keys {sorted(x)} in the structure")
    (tag, v), = x.items()
    if tag == "float":
        if not isinstance(v, str):
            raise _bad("a float must be stored as its repr string")
        try:
            return float(v)
        except ValueError:
            raise _bad(f"invalid float {v!r} in the structure") from None
    if tag == "sparse_coo":
        return _decode_sparse(v, tensors, restore, depth, memo)
    if tag in ("list", "tuple") and isinstance(v, list):
        items = [_decode(i, tensors, restore, depth + 1, memo) for i in v]
        return items if tag == "list" else tuple(items)
    if tag in ("dict", "odict") and isinstance(v, list):
        out = collections.OrderedDict() if tag == "odict" else {}
        for pair in v:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise _bad("dict items must be [key, value] pairs")
            k = _decode(pair[0], tensors, restore, depth + 1, memo)
            try:
                hash(k)
            except TypeError:
                raise _bad(f"unhashable dict key of type {type(k).__name__}") from None
            out[k] = _decode(pair[1], tensors, restore, depth + 1, memo)
        return out
    raise _bad(f"unknown tag {tag!r} in the structure")


def _decode_sparse(v, tensors, restore, depth, memo):
    """A sparse COO tensor saved as its indices, values, size and coalesced flag; rebuilt
    through the checked constructor (index bounds and the coalesced claim verified)."""
    if not (isinstance(v, dict) and set(v) == {"indices", "values", "size", "coalesced",
                                                "requires_grad"}):
        raise _bad("a sparse_coo entry needs indices, values, size, coalesced, requires_grad")
    size, coalesced, requires_grad = v["size"], v["coalesced"], v["requires_grad"]
    if not (isinstance(size, list) and len(size) <= MAX_NDIM and all(_is_int(n) and n >= 0
                                                                      for n in size)):
        raise _bad(f"a sparse tensor has an invalid size {size!r}")
    if not isinstance(coalesced, bool) or not isinstance(requires_grad, bool):
        raise _bad("a sparse tensor's coalesced and requires_grad must be true or false")
    indices = _decode(v["indices"], tensors, restore, depth + 1, memo)
    values = _decode(v["values"], tensors, restore, depth + 1, memo)
    if not (isinstance(indices, _C.Tensor) and isinstance(values, _C.Tensor)):
        raise _bad("a sparse tensor's indices and values must be tensors")
    if indices.dtype != _C.int64 or indices.dim() != 2:
        raise _bad("a sparse tensor's indices must be a 2-D int64 tensor")
    try:
        t = _C._sparse_coo_tensor(indices, values, tuple(size), None, None, True, coalesced)
    except RuntimeError as e:
        raise _bad(f"inconsistent sparse tensor: {e}") from None
    if requires_grad:
        if not t.is_floating_point():
            raise _bad("only floating point sparse tensors can require grad")
        t.requires_grad_(True)
    return t


def _decode_view(x, tensors, restore, memo):
    """A tensor saved as a view of a shared storage (Note [Shared storages])."""
    name = x["view"]
    if not isinstance(name, str) or name not in tensors or tensors[name].dim() != 1:
        raise _bad(f"a view refers to a storage {name!r} the header does not describe as 1-D")
    if not isinstance(x["device"], str):
        raise _bad(f"storage '{name}': device must be a string")
    shape, stride, offset = x["shape"], x["stride"], x["offset"]
    if not (isinstance(shape, list) and isinstance(stride, list) and len(shape) == len(stride)
            and len(shape) <= 64 and all(_is_int(v) and v >= 0 for v in shape + stride + [offset])):
        raise _bad(f"a view of '{name}' has an invalid shape/stride/offset {shape}/{stride}/{offset}")
    extent = offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1
    numel = 1
    for n in shape:
        numel *= n
    if numel and extent > tensors[name].numel():
        raise _bad(f"a view of '{name}' (shape {shape}, stride {stride}, offset {offset}) reaches "
                   f"element {extent - 1} of a storage of {tensors[name].numel()} elements")
    key = ("storage", name, x["device"])
    if key not in memo:
        memo[key] = restore(tensors[name], x["device"])
    t = memo[key].as_strided(shape, stride, offset) if numel else memo[key].new_empty(shape)
    requires_grad = x.get("requires_grad", False)
    if requires_grad is not False:
        if requires_grad is not True or not t.is_floating_point():
            raise _bad(f"a view of '{name}': requires_grad must be true, and only for floating tensors")
        t = t.detach().requires_grad_(True)
    return t


class _Restorer:
    """Applies map_location to each loaded CPU tensor, given the device it was saved from."""

    def __init__(self, map_location):
        if not (map_location is None or isinstance(map_location, (str, dict, _C.device))
                or callable(map_location)):
            raise TypeError("ember.load: map_location must be None, a string, an ember.device, a dict "
                            f"or a callable, got {type(map_location).__name__}")
        self.map_location = map_location

    def __call__(self, t, location):
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, dict, _C.device)):
            r = ml(t, location)
            if r is not None:
                if not isinstance(r, _C.Tensor):
                    raise TypeError(f"ember.load: map_location returned {type(r).__name__}, not a Tensor")
                return r
            target = location
        elif isinstance(ml, dict):
            target = ml.get(location, location)
        elif ml is None:
            target = location
        else:
            target = ml
        try:
            dev = _C.device(target) if not isinstance(target, _C.device) else target
        except (RuntimeError, TypeError, ValueError) as e:
            raise RuntimeError(f"ember.load: invalid device {target!r} ({e})") from None
        if dev.type == "cuda":
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() "
                    "is False. If you are running on a CPU-only machine, please use ember.load with "
                    "map_location=ember.device('cpu') to map your storages to the CPU.")
            return t.to(dev)
        return t


def _file_size(fh):
    """Bytes from the current position to the end, or None when the stream cannot seek."""
    try:
        if hasattr(fh, "fileno"):
            try:
                st = os.fstat(fh.fileno())
                if st.st_size or os.path.isfile(getattr(fh, "name", "")):
                    return st.st_size - fh.tell()
            except (OSError, io.UnsupportedOperation):
                pass
        if fh.seekable():
            pos = fh.tell()
            end = fh.seek(0, io.SEEK_END)
            fh.seek(pos)
            return end - pos
    except (OSError, AttributeError, io.UnsupportedOperation):
        pass
    return None


def load(f, map_location=None, weights_only=None, **pickle_load_args):
    """Loads an object saved by ``ember.save`` (or any safetensors file) from a path or a
    binary file object.

    map_location: None (each tensor to the device it was saved from), a device or string,
    a dict {saved location: target}, or a callable ``fn(tensor, location)`` returning a
    tensor (or None for the default). weights_only: None/True only accept the code-free
    format; a file of pickled objects needs an explicit ``weights_only=False`` because
    unpickling runs code from the file.
    """
    restore = _Restorer(map_location)
    fh, owned = _open_for(f, "rb")
    try:
        size = _file_size(fh)
        if size is None:  # a pipe or socket: take it into memory to know its length
            data = fh.read()
            if owned:
                fh.close()
            fh, size, owned = io.BytesIO(data), len(data), False
        pos = fh.tell()
        if fh.read(len(EMBER_PICKLE_MAGIC)) == EMBER_PICKLE_MAGIC:
            return _load_pickle(fh, restore, weights_only, pickle_load_args)
        fh.seek(pos)
        return _load_safe(fh, size, restore)
    finally:
        if owned:
            fh.close()


def _load_safe(fh, size, restore):
    meta, entries = _read_header(fh, size)
    tensors = {}
    for begin, end, name, dtype, shape in entries:  # file order: sequential reads
        arr = np.empty(shape, dtype=np.int16 if dtype == "bfloat16" else np.dtype(dtype))
        if end > begin:
            _read_into(fh, arr, name)
        t = _C.from_numpy(arr)
        if dtype == "bfloat16":
            t = t.view(_C.bfloat16)
        tensors[name] = t
    if meta.get("format") != FORMAT_NAME or "structure" not in meta:
        # A plain safetensors file: its tensors by name, in file order.
        return {name: restore(t, "cpu") for name, t in tensors.items()}
    if meta.get("version") != FORMAT_VERSION:
        raise _bad(f"unsupported ember format version {meta.get('version')!r} "
                   f"(this ember reads version {FORMAT_VERSION})")
    structure = _parse_json(meta["structure"], "the structure metadata")
    return _decode(structure, tensors, restore)


def _load_pickle(fh, restore, weights_only, pickle_load_args):
    if weights_only is None or weights_only:
        raise pickle.UnpicklingError(
            "Weights only load failed: this file holds pickled Python objects (ember.save writes "
            "them when an object is not a tensor, container or plain value), and unpickling can "
            "run code from the file. Re-run ember.load with weights_only=False only if you trust "
            "its source.")

    class _Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "ember._tensor" and name == "_rebuild_tensor":
                def rebuild(data, dtype_name, shape, device, requires_grad=False):
                    t = _rebuild_tensor(data, dtype_name, shape, "cpu", requires_grad)
                    return restore(t, device)
                return rebuild
            return super().find_class(module, name)

    return _Unpickler(fh, **pickle_load_args).load()
