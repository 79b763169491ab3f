"""ember.save / ember.load: a safe, code-free file format.

Note [File format]
The default format is safetensors-compatible:

    8 bytes   N, the header length (unsigned, little-endian)
    N bytes   a UTF-8 JSON object: {"__metadata__": {str: str},
              "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
              (padded with spaces to a multiple of 8 bytes)
    rest      the tensors' raw little-endian bytes; offsets are relative to this section,
              sorted, contiguous and covering it exactly

ember puts the saved object's container structure (dicts, lists, tuples, sets, plain values,
Size, dtype, device, namedtuples and references to tensor names: Note [Structure records])
as JSON in ``__metadata__["structure"]``. Nothing in the file is code. ``load`` validates
every field before allocating anything, so a malformed or hostile file raises RuntimeError
naming the problem instead of crashing or allocating what a lying header claims. Plain
safetensors files load as a dict of tensors; PyTorch's zip checkpoints load too (Note
[PyTorch checkpoints] in _torch_checkpoint.py).

Note [Checkpoint integrity]
Version 2 files carry two CRC-32C checksums in ``__metadata__``: ``data_crc32c`` over the
data section and ``header_crc32c`` over the header (its canonical JSON, these two keys left
out). ``load`` verifies both, so a flipped bit in a weight is an error, not a silently
different model. ``save`` to a path writes a temporary file in the same directory, fsyncs it
and renames it over the target: a save that fails (or is killed) leaves the old file intact.

Objects the format cannot describe are pickled instead (``EMBER_PICKLE_MAGIC`` + a pickle).
``load`` reads such a file with the weights-only unpickler (Note [Weights-only unpickling]
in _weights_only.py): it accepts tensors and the values PyTorch's weights-only loader
accepts, plus what ``add_safe_globals`` allows; anything else needs ``weights_only=False``,
which runs code from the file. ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (or
``EMBER_FORCE_NO_WEIGHTS_ONLY_LOAD=1``) makes that the default for trusted legacy files;
``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` / ``EMBER_FORCE_WEIGHTS_ONLY_LOAD=1`` forces weights-only
even when ``weights_only=False`` is passed.
"""
from __future__ import annotations

import base64
import collections
import io
import json
import os
import pickle
import stat
import struct
import tempfile
import warnings

import numpy as np

from . import _C
from . import _torch_checkpoint as _torch
from . import _weights_only as _wo
from ._size import Size
from ._tensor import _raw_numpy, _rebuild_tensor
from ._weights_only import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "register_layout"]

EMBER_PICKLE_MAGIC = b"EMBERPKL"
MAX_HEADER_BYTES = 100 * 1024 * 1024
MAX_NESTING = 200
MAX_NDIM = 64
FORMAT_NAME = "ember"
FORMAT_VERSION = "2"
_READ_VERSIONS = ("1", "2")
_CRC_KEYS = ("data_crc32c", "header_crc32c")

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
            layout = _layout_name(x)
            if layout != "strided":
                if layout not in _LAYOUTS:
                    raise _NotRepresentable(f"tensors of layout {layout}")
                entry = dict(_LAYOUTS[layout][0](self, x, path), layout=layout)
            else:
                entry = self.strided_record(x, path)
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
        if isinstance(x, complex):
            return {"complex": [repr(x.real), repr(x.imag)]}
        if isinstance(x, (bytes, bytearray)):
            tag = "bytes" if isinstance(x, bytes) else "bytearray"
            if tag == "bytearray" and key:
                raise _NotRepresentable("bytearray dict keys")
            return {tag: base64.b64encode(bytes(x)).decode("ascii")}
        if isinstance(x, _C.dtype):
            return {"dtype": _dtype_name_of(x)}
        if isinstance(x, _C.device):
            return {"device": str(x)}
        if type(x) is Size:
            return {"size": [int(v) for v in x]}
        if isinstance(x, tuple) and type(x) is not tuple and _is_namedtuple_type(type(x)):
            cls = type(x)
            return {"namedtuple": [cls.__module__, cls.__qualname__, list(cls._fields),
                                   [self.encode(v, path + [f], depth + 1, key)
                                    for f, v in zip(cls._fields, x)]]}
        if isinstance(x, tuple) and type(x) is tuple:
            return {"tuple": [self.encode(v, path + [str(i)], depth + 1, key) for i, v in enumerate(x)]}
        if type(x) is frozenset:
            return {"frozenset": [self.encode(v, path, depth + 1, True) for v in x]}
        if key:
            raise _NotRepresentable(f"dict keys of type {type(x).__name__}")
        if type(x) is set:
            return {"set": [self.encode(v, path, depth + 1, True) for v in x]}
        if type(x) is list:
            return {"list": [self.encode(v, path + [str(i)], depth + 1) for i, v in enumerate(x)]}
        if type(x) in (dict, collections.OrderedDict):
            items = [[self.encode(k, path, depth + 1, key=True),
                      self.encode(v, path + [str(k)], depth + 1)] for k, v in x.items()]
            return {"odict" if type(x) is collections.OrderedDict else "dict": items}
        raise _NotRepresentable(f"objects of type {type(x).__name__}")

    def strided_record(self, x, path):
        """The record of a strided tensor (Note [Tensor records]); layouts built on strided
        tensors (sparse: indices and values) call this for their parts."""
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
        return entry


# Note [Tensor records]
# A strided tensor's structure record is {"tensor": name, "device": d} (the header entry
# `name` holds its elements) or, when it shares a storage with another saved tensor,
# {"view": storage name, "device", "offset", "shape", "stride"}; either may add
# "requires_grad": true. A tensor of another layout is a record with "layout": <name> and
# whatever fields that layout's encoder writes, usually strided records of its parts
# (register_layout). A record without "layout" is strided, so version 1 files still read.
_LAYOUTS = {}  # layout name -> (encode(encoder, tensor, path) -> dict, decode(record, ctx) -> tensor)


def register_layout(name, encode, decode):
    """Teaches save/load a tensor layout other than strided. ``encode(encoder, t, path)``
    returns the record's fields (``encoder.strided_record(part, path + ["indices"])`` stores a
    strided part); ``decode(record, ctx)`` rebuilds the tensor, ``ctx.tensor(part_record)``
    loading a strided part. The record gets ``"layout": name``."""
    _LAYOUTS[name] = (encode, decode)


def _layout_name(t):
    layout = getattr(t, "layout", None)
    return "strided" if layout is None else str(layout).rpartition(".")[2]


def _dtype_name_of(d):
    return str(d).rpartition(".")[2]


def _is_namedtuple_type(cls):
    fields = getattr(cls, "_fields", None)
    return isinstance(fields, tuple) and all(isinstance(f, str) for f in fields)


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
    elif isinstance(x, (list, tuple)):
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


def _umask():
    try:
        with open("/proc/self/status") as st:
            for line in st:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # (racy with other threads; only where /proc is missing)
    os.umask(mask)
    return mask


def _write_atomically(path, write):
    """Runs write(fh) into a temporary file next to `path`, fsyncs it and renames it over
    `path` (Note [Checkpoint integrity]): the old file stays whole until the new one is
    complete. A path that is not a regular file (/dev/null, a FIFO) is written directly."""
    path = os.path.realpath(os.fspath(path))  # through a symlink, as open() would write
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            with open(path, "wb") as fh:
                write(fh)
            return
        mode = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    folder, base = os.path.split(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder or ".")
    except PermissionError:  # a writable file in a read-only directory: no atomic rename
        with open(path, "wb") as fh:
            write(fh)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself reaches the disk with the directory
        dfd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _emit(f, write):
    """Sends `write(fh)` to a path (atomically) or a file object."""
    if isinstance(f, (str, os.PathLike)):
        _write_atomically(f, write)
    else:
        fh, _ = _open_for(f, "wb")
        write(fh)


def _canonical_header_bytes(header):
    """The bytes header_crc32c covers: the header without the checksums, canonical JSON."""
    h = dict(header)
    meta = {k: v for k, v in h.get("__metadata__", {}).items() if k not in _CRC_KEYS}
    h["__metadata__"] = meta
    return json.dumps(h, sort_keys=True, separators=(",", ":")).encode("utf-8")


def save(obj, f, pickle_protocol=2, _use_new_zipfile_serialization=True, *, format="ember"):
    """Saves tensors and nested containers (dict, OrderedDict, list, tuple, namedtuple, set)
    of tensors and plain values (numbers, str, bytes, None, Size, dtype, device) to ``f``, a
    path or a binary file object, in the safe format of Note [File format].

    Each tensor's own elements are written (a view saves just its elements). Objects the
    format cannot hold (arbitrary classes) are pickled; such files load only with
    ``ember.load(f, weights_only=False)`` or with those classes in ``add_safe_globals``.
    A path is written atomically (Note [Checkpoint integrity]).

    ``format="torch"`` writes PyTorch's zip checkpoint format instead, which ``torch.load``
    reads (tensors, containers and plain values).
    """
    if format == "torch":
        buf = io.BytesIO()
        _torch.save_zip(obj, buf)  # built in memory first: a failure writes nothing
        _emit(f, lambda fh: fh.write(buf.getbuffer()))
        return
    if format != "ember":
        raise ValueError(f"ember.save: format must be 'ember' or 'torch', got {format!r}")
    enc = _Encoder(_shared_storage_keys(obj))
    try:
        structure = enc.encode(obj, [])
    except _NotRepresentable:
        data = _pickle_bytes(obj, pickle_protocol)  # pickled first: a failure writes nothing
        _emit(f, lambda fh: fh.write(data))
        return

    header = {"__metadata__": {"format": FORMAT_NAME, "version": FORMAT_VERSION,
                               "structure": json.dumps(structure, separators=(",", ":"))}}
    offset = 0
    arrays = []
    data_crc = 0
    for name, t in enc.tensors:  # one tensor materialized at a time on the device's side
        arr = _raw_numpy(t).reshape(-1)
        n = arr.size * arr.itemsize
        header[name] = {"dtype": _DTYPE_TO_CODE[_dtype_name(t)], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
        if n:
            data_crc = _C._crc32c(arr.view(np.uint8), data_crc)
        # A CPU tensor's array is a view, kept; another device's is a host copy, taken
        # again while writing so that only one is alive at a time.
        arrays.append(arr if t.device.type == "cpu" else t)
    header["__metadata__"]["data_crc32c"] = f"{data_crc:08x}"
    header["__metadata__"]["header_crc32c"] = f"{_C._crc32c(_canonical_header_bytes(header)):08x}"
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)  # 8-byte alignment of the data section, as safetensors

    def write(fh):
        fh.write(struct.pack("<Q", len(hb)))
        fh.write(hb)
        for arr in arrays:
            if isinstance(arr, _C.Tensor):
                arr = _raw_numpy(arr).reshape(-1)
            if arr.size:
                fh.write(memoryview(arr.view(np.uint8)))

    _emit(f, write)


def _pickle_bytes(obj, protocol):
    buf = io.BytesIO()
    buf.write(EMBER_PICKLE_MAGIC)
    pickle.dump(obj, buf, protocol=protocol)
    return buf.getbuffer()


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
    _check_header_crc(meta or {}, header)
    return meta or {}, entries


def _ember_v2(meta):
    """Whether the file carries (or must carry) checksums: an ember file of version 2 or
    later, or any file with one of the checksum keys (a flipped bit in "format" must not
    turn a checksummed file into an unchecked plain safetensors one)."""
    if any(k in meta for k in _CRC_KEYS):
        return True
    return meta.get("format") == FORMAT_NAME and meta.get("version", "1") not in ("1",)


def _check_header_crc(meta, entries_by_name):
    """Note [Checkpoint integrity]: the header checksum of a version 2 ember file."""
    if not _ember_v2(meta):
        return
    if meta.get("format") == FORMAT_NAME and meta.get("version") not in _READ_VERSIONS:
        raise _bad(f"unsupported ember format version {meta.get('version')!r} "
                   f"(this ember reads versions {', '.join(_READ_VERSIONS)})")
    for k in _CRC_KEYS:
        if not isinstance(meta.get(k), str) or len(meta[k]) != 8:
            raise _bad(f"the checksum {k} is missing or malformed (corrupted file?)")
    full = dict(entries_by_name, __metadata__=meta)
    got = _C._crc32c(_canonical_header_bytes(full))
    if f"{got:08x}" != meta["header_crc32c"]:
        raise _bad(f"checksum mismatch in the header (stored crc32c {meta['header_crc32c']}, "
                   f"computed {got:08x}): the file is corrupted")


def _decode(x, tensors, restore, depth=0, memo=None):
    if depth > MAX_NESTING:
        raise _bad(f"structure nested deeper than {MAX_NESTING} levels")
    if memo is None:
        memo = {}
    if x is None or type(x) in (bool, int, str):
        return x
    if not isinstance(x, dict):
        raise _bad(f"unexpected {type(x).__name__} in the structure")
    layout = x.get("layout", "strided") if "layout" in x and len(x) > 1 else "strided"
    if layout != "strided":
        if not isinstance(layout, str) or layout not in _LAYOUTS:
            raise _bad(f"tensors of layout {layout!r} are not supported by this ember")
        return _LAYOUTS[layout][1](x, _DecodeContext(tensors, restore, memo))
    if "layout" in x and len(x) > 1:
        x = {k: v for k, v in x.items() if k != "layout"}
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
    if tag in ("list", "tuple") and isinstance(v, list):
        items = [_decode(i, tensors, restore, depth + 1, memo) for i in v]
        return items if tag == "list" else tuple(items)
    if tag in ("set", "frozenset") and isinstance(v, list):
        items = [_decode(i, tensors, restore, depth + 1, memo) for i in v]
        try:
            return set(items) if tag == "set" else frozenset(items)
        except TypeError:
            raise _bad(f"unhashable element in a {tag}") from None
    if tag in _VALUE_TAGS:
        return _VALUE_TAGS[tag](v)
    if tag == "namedtuple":
        return _decode_namedtuple(v, tensors, restore, depth, memo)
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


class _DecodeContext:
    """What a layout's decoder gets (register_layout): ``tensor(record)`` loads a strided
    part record."""

    def __init__(self, tensors, restore, memo):
        self._args = (tensors, restore)
        self._memo = memo

    def tensor(self, record):
        t = _decode(record, *self._args, depth=MAX_NESTING, memo=self._memo)
        if not isinstance(t, _C.Tensor):
            raise _bad("a tensor record's part is not a tensor")
        return t


def _decode_size(v):
    if not (isinstance(v, list) and len(v) <= MAX_NDIM and all(_is_int(i) for i in v)):
        raise _bad(f"a Size must be a list of at most {MAX_NDIM} integers, got {v!r:.80}")
    return Size(v)


def _decode_complex(v):
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(i, str) for i in v)):
        raise _bad("a complex must be stored as [repr(real), repr(imag)]")
    try:
        return complex(float(v[0]), float(v[1]))
    except ValueError:
        raise _bad(f"invalid complex {v!r:.80}") from None


def _decode_b64(tag):
    def decode(v):
        if not isinstance(v, str):
            raise _bad(f"{tag} must be stored as base64 text")
        try:
            b = base64.b64decode(v.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise _bad(f"invalid base64 in a {tag}") from None
        return b if tag == "bytes" else bytearray(b)
    return decode


def _decode_dtype(v):
    if not isinstance(v, str) or v not in _ITEMSIZE:
        raise _bad(f"unknown dtype {v!r:.40} in the structure")
    return getattr(_C, v)


def _decode_device(v):
    if not isinstance(v, str) or len(v) > 32:
        raise _bad(f"invalid device {v!r:.40} in the structure")
    try:
        return _C.device(v)
    except (RuntimeError, ValueError, TypeError):
        raise _bad(f"invalid device {v!r} in the structure") from None


_VALUE_TAGS = {"size": _decode_size, "complex": _decode_complex, "bytes": _decode_b64("bytes"),
               "bytearray": _decode_b64("bytearray"), "dtype": _decode_dtype,
               "device": _decode_device}
_namedtuple_classes = {}  # (module, qualname, fields) -> a class made for them


def _namedtuple_class(module, qualname, fields):
    """The class for a saved namedtuple, without importing anything: ember's return types,
    a class allowed with add_safe_globals, else a namedtuple made with its name and fields."""
    want = tuple(fields)
    candidates = []
    if module == "ember.return_types":
        from . import return_types  # noqa: PLC0415
        candidates.append(getattr(return_types, qualname, None))
    candidates.append(_wo.user_allowed().get(f"{module}.{qualname}"))
    for cls in candidates:
        if isinstance(cls, type) and issubclass(cls, tuple) and getattr(cls, "_fields", None) == want:
            return cls
    key = (module, qualname, want)
    if key not in _namedtuple_classes:
        name = qualname.rpartition(".")[2]
        try:
            cls = collections.namedtuple(name, want)
        except (ValueError, TypeError) as e:
            raise _bad(f"invalid namedtuple {qualname!r:.60} ({e})") from None
        cls.__module__ = module
        _namedtuple_classes[key] = cls
    return _namedtuple_classes[key]


def _decode_namedtuple(v, tensors, restore, depth, memo):
    if not (isinstance(v, list) and len(v) == 4 and isinstance(v[0], str) and isinstance(v[1], str)
            and isinstance(v[2], list) and all(isinstance(f, str) for f in v[2])
            and isinstance(v[3], list) and len(v[3]) == len(v[2])):
        raise _bad("a namedtuple must be stored as [module, name, [fields], [values]]")
    cls = _namedtuple_class(v[0], v[1], v[2])
    return cls(*[_decode(i, tensors, restore, depth + 1, memo) for i in v[3]])


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


def _env_flag(*names):
    return any(os.environ.get(n, "").strip().lower() in ("1", "y", "yes", "true") for n in names)


def _resolve_weights_only(weights_only):
    """weights_only after the environment switches (as PyTorch's TORCH_FORCE_* variables)."""
    if _env_flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "EMBER_FORCE_WEIGHTS_ONLY_LOAD"):
        return True
    if weights_only is None:
        if _env_flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "EMBER_FORCE_NO_WEIGHTS_ONLY_LOAD"):
            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD (or "
                          "EMBER_FORCE_NO_WEIGHTS_ONLY_LOAD) detected: ember.load defaults to "
                          "weights_only=False, which can run code from the file; use it only "
                          "for files you trust.", UserWarning, stacklevel=3)
            return False
        return True
    return bool(weights_only)


def load(f, map_location=None, weights_only=None, mmap=None, **pickle_load_args):
    """Loads an object saved by ``ember.save``, a safetensors file or a PyTorch zip
    checkpoint (``torch.save``), from a path or a binary file object.

    map_location: None (each tensor to the device it was saved from), a device or string,
    a dict {saved location: target}, or a callable ``fn(tensor, location)`` returning a
    tensor (or None for the default). weights_only (default True, see Note [File format]
    for the environment switches): pickled data may only name tensors and the allowlisted
    values (Note [Weights-only unpickling]); ``weights_only=False`` unpickles anything,
    which runs code from the file.
    """
    restore = _Restorer(map_location)
    weights_only = _resolve_weights_only(weights_only)
    fh, owned = _open_for(f, "rb")
    try:
        size = _file_size(fh)
        if size is None:  # a pipe or socket: take it into memory to know its length
            data = fh.read()
            if owned:
                fh.close()
            fh, size, owned = io.BytesIO(data), len(data), False
        pos = fh.tell()
        head = fh.read(264)
        fh.seek(pos)
        if head.startswith(EMBER_PICKLE_MAGIC):
            fh.seek(pos + len(EMBER_PICKLE_MAGIC))
            return _load_pickle(fh, restore, weights_only, pickle_load_args)
        if head.startswith(_torch.ZIP_MAGIC):
            return _torch.load_zip(fh, restore, weights_only)
        # A safetensors header is JSON: "{" after the 8-byte length. Anything else that we
        # recognize (a PyTorch legacy checkpoint, a plain pickle) is named in the error.
        other = _torch.describe(head) if head[8:9] != b"{" else None
        if other is not None:
            raise _bad(f"this is {other}")
        return _load_safe(fh, size, restore)
    finally:
        if owned:
            fh.close()


def get_unsafe_globals_in_checkpoint(f):
    """The "module.name" globals a pickled checkpoint (ember's pickle fallback, or a PyTorch
    zip checkpoint) names that weights-only loading does not allow, without loading it."""
    fh, owned = _open_for(f, "rb")
    try:
        data = fh.read()
    finally:
        if owned:
            fh.close()
    if data.startswith(EMBER_PICKLE_MAGIC):
        names = _wo.globals_in_pickle(data[len(EMBER_PICKLE_MAGIC):])
        allowed = _ember_allowed(_Restorer(None))
    elif data.startswith(_torch.ZIP_MAGIC):
        import zipfile  # noqa: PLC0415
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = _wo.globals_in_pickle(zf.read(_torch._archive_prefix(zf) + "data.pkl"))
        allowed = _torch._allowed(None)
    else:
        return []  # the safe format names no globals
    user = _wo.user_allowed()
    return sorted({n for n in names if n not in allowed and n not in user})


def _load_safe(fh, size, restore):
    meta, entries = _read_header(fh, size)
    if meta.get("format") == "ember.jit":
        raise RuntimeError("ember.load: this file is an ember.jit archive (a traced or scripted "
                           "module or function saved by ember.jit.save or ScriptModule.save); "
                           "load it with ember.jit.load")
    tensors = {}
    data_crc = 0
    for begin, end, name, dtype, shape in entries:  # file order: sequential reads
        arr = np.empty(shape, dtype=np.int16 if dtype == "bfloat16" else np.dtype(dtype))
        if end > begin:
            _read_into(fh, arr, name)
            data_crc = _C._crc32c(arr.reshape(-1).view(np.uint8), data_crc)
        t = _C.from_numpy(arr)
        if dtype == "bfloat16":
            t = t.view(_C.bfloat16)
        tensors[name] = t
    if _ember_v2(meta) and f"{data_crc:08x}" != meta["data_crc32c"]:
        raise _bad(f"checksum mismatch in the tensor data (stored crc32c {meta['data_crc32c']}, "
                   f"computed {data_crc:08x}): the file is corrupted")
    if meta.get("format") != FORMAT_NAME or "structure" not in meta:
        # A plain safetensors file: its tensors by name, in file order.
        return {name: restore(t, "cpu") for name, t in tensors.items()}
    if meta.get("version") not in _READ_VERSIONS:
        raise _bad(f"unsupported ember format version {meta.get('version')!r} "
                   f"(this ember reads versions {', '.join(_READ_VERSIONS)})")
    structure = _parse_json(meta["structure"], "the structure metadata")
    return _decode(structure, tensors, restore)


_DTYPE_NAMES = tuple(_ITEMSIZE)


def _ember_allowed(restore):
    """The globals of ember's own pickles that weights-only loading accepts."""
    from . import return_types  # noqa: PLC0415
    from ._storage import strided  # noqa: PLC0415
    from .nn.parameter import Parameter  # noqa: PLC0415

    def rebuild_tensor(data, dtype_name, shape, device, requires_grad=False):
        if not isinstance(dtype_name, str) or dtype_name not in _DTYPE_NAMES:
            raise _bad(f"unknown dtype {dtype_name!r:.40} in the pickled data")
        if not isinstance(data, (bytes, bytearray)) or not isinstance(device, str):
            raise _bad("malformed pickled tensor")
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else None
        if shape is None or len(shape) > MAX_NDIM or not all(_is_int(n) and n >= 0 for n in shape):
            raise _bad(f"invalid pickled tensor shape {shape!r:.80}")
        numel = 1
        for n in shape:
            numel *= n
        if numel * _ITEMSIZE[dtype_name] != len(data):
            raise _bad(f"a pickled tensor of shape {list(shape)} and dtype {dtype_name} holds "
                       f"{len(data)} bytes")
        t = _rebuild_tensor(data, dtype_name, shape, "cpu", bool(requires_grad))
        return restore(t, device)

    def rebuild_view(flat, shape, stride, offset, requires_grad=False):
        from ._tensor import _rebuild_view  # noqa: PLC0415
        if not isinstance(flat, _C.Tensor):
            raise _bad("malformed pickled view")
        return _rebuild_view(flat, tuple(shape), tuple(stride), int(offset), bool(requires_grad))

    def rebuild_parameter(data, requires_grad, hooks=None):
        if not isinstance(data, _C.Tensor):
            raise _bad("malformed pickled Parameter")
        return Parameter(data, bool(requires_grad))

    allowed = dict(_wo.base_allowed())
    allowed.update({
        "ember._tensor._rebuild_tensor": rebuild_tensor,
        "ember._tensor._rebuild_view": rebuild_view,
        "ember.nn.parameter._rebuild_parameter": rebuild_parameter,
        "ember._size.Size": Size,
        "ember._C.device": _C.device,
        "ember._storage.strided": strided,
    })
    for name in _DTYPE_NAMES:
        allowed[f"ember._C.{name}"] = getattr(_C, name)
    for name in return_types.__all__:
        cls = getattr(return_types, name)
        allowed[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return allowed


def _load_pickle(fh, restore, weights_only, pickle_load_args):
    """Note [Weights-only unpickling]: ember's pickle fallback, read with the allowlist."""
    allowed = _ember_allowed(restore)
    if not weights_only:
        # Unrestricted, but tensors still go through map_location.
        return _wo.load(fh, {k: allowed[k] for k in ("ember._tensor._rebuild_tensor",)},
                        unrestricted=True, **pickle_load_args)
    return _wo.load(fh, allowed, **pickle_load_args)


# Sparse COO tensors (Note [Tensor records]): the indices and values as strided parts, the
# size and the coalesced flag; loading rebuilds through the checked constructor, so index
# bounds and the coalesced claim are verified rather than trusted.
def _encode_sparse_coo(encoder, t, path):
    return {"indices": encoder.strided_record(t._indices(), path + ["indices"]),
            "values": encoder.strided_record(t._values(), path + ["values"]),
            "size": list(t.shape), "coalesced": t.is_coalesced(),
            "requires_grad": t.requires_grad}


def _decode_sparse_coo(v, ctx):
    if set(v) != {"layout", "indices", "values", "size", "coalesced", "requires_grad"}:
        raise _bad("a sparse_coo record needs indices, values, size, coalesced, requires_grad")
    size, coalesced, requires_grad = v["size"], v["coalesced"], v["requires_grad"]
    if not (isinstance(size, list) and len(size) <= MAX_NDIM
            and all(_is_int(n) and n >= 0 for n in size)):
        raise _bad(f"a sparse tensor has an invalid size {size!r:.80}")
    if not isinstance(coalesced, bool) or not isinstance(requires_grad, bool):
        raise _bad("a sparse tensor's coalesced and requires_grad must be true or false")
    indices, values = ctx.tensor(v["indices"]), ctx.tensor(v["values"])
    if indices.dtype != _C.int64 or indices.dim() != 2:
        raise _bad("a sparse tensor's indices must be a 2-D int64 tensor")
    try:
        t = _C._sparse_coo_tensor(indices.detach(), values.detach(), tuple(size), None, None,
                                  True, coalesced)
    except RuntimeError as e:
        raise _bad(f"inconsistent sparse tensor: {e}") from None
    if requires_grad:
        if not t.is_floating_point():
            raise _bad("only floating point sparse tensors can require grad")
        t.requires_grad_(True)
    return t


register_layout("sparse_coo", _encode_sparse_coo, _decode_sparse_coo)
