"""ember.save / ember.load: round trips, the safetensors-compatible layout, map_location,
weights_only, and malformed or hostile files (each must raise a clear error)."""
import collections
import io
import json
import math
import pickle
import random
import struct

import numpy as np
import pytest
from checkpoint_helpers import rechecksummed

import ember
from ember import serialization

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


def T(x, dtype=None):
    return ember.from_numpy(np.array(x, dtype=dtype))


def roundtrip(obj, **load_kw):
    f = io.BytesIO()
    ember.save(obj, f)
    f.seek(0)
    return ember.load(f, **load_kw)


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert a.tolist() == b.tolist() or (a.dtype.is_floating_point and np.array_equal(
        np.array(a.to(ember.float64).tolist()), np.array(b.to(ember.float64).tolist()), equal_nan=True))


# ---- round trips ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (2, 3, 4)])
def test_tensor_round_trip(dtype, shape):
    a = np.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 1.5 - 3)
    t = ember.from_numpy(a).to(getattr(ember, dtype))
    r = roundtrip(t)
    same(r, t)
    if t.numel():
        assert r.data_ptr() != t.data_ptr()


def test_nested_containers_and_plain_values():
    t = T([[1.0, 2.0], [3.0, 4.0]], np.float32)
    obj = {
        "w": t, "b": [t[0], (1, 2.5, "x")],
        7: None, (1, "k"): {"deep": [[[T(5)]]]}, None: True, 2.5: -0.0,
        "floats": [math.inf, -math.inf, math.nan, 1e-310, 10 ** 30],
        "text": "ünïcødé \u2603", "empty": [(), [], {}],
    }
    r = roundtrip(obj)
    assert list(r) == list(obj)
    same(r["w"], t)
    assert isinstance(r["b"], list) and isinstance(r["b"][1], tuple) and r["b"][1] == (1, 2.5, "x")
    assert r[7] is None and r[None] is True and math.copysign(1, r[2.5]) == -1
    same(r[(1, "k")]["deep"][0][0][0], T(5))
    f = r["floats"]
    assert f[0] == math.inf and f[1] == -math.inf and math.isnan(f[2]) and f[3] == 1e-310
    assert f[4] == 10 ** 30 and type(f[4]) is int
    assert r["text"] == obj["text"] and r["empty"] == [(), [], {}]


def test_state_dict_round_trips_as_ordered_dict():
    sd = collections.OrderedDict([("layer.weight", T([[1.0, 2.0]], np.float32)),
                                  ("layer.bias", T([0.5], np.float32)),
                                  ("bn.num_batches_tracked", T(3))])
    r = roundtrip(sd)
    assert type(r) is collections.OrderedDict and list(r) == list(sd)
    for k in sd:
        same(r[k], sd[k])
    r2 = roundtrip({"model": sd, "epoch": 4})
    assert type(r2) is dict and type(r2["model"]) is collections.OrderedDict


def test_a_lone_view_saves_only_its_elements():
    big = ember.from_numpy(np.arange(10000, dtype=np.float64).reshape(100, 100))
    col = big.narrow(1, 3, 1)  # non-contiguous (100, 1) view
    f = io.BytesIO()
    ember.save({"col": col}, f)
    assert len(f.getvalue()) < 100 * 8 + 2000
    f.seek(0)
    r = ember.load(f)
    assert r["col"].tolist() == col.tolist() and r["col"].is_contiguous()
    r["col"].fill_(0)  # loaded tensors own their memory
    assert big.tolist()[5][3] == 503.0


def test_views_of_one_storage_load_sharing_it():
    big = ember.from_numpy(np.arange(10000, dtype=np.float64).reshape(100, 100))
    col = big.narrow(1, 3, 1)
    f = io.BytesIO()
    ember.save({"col": col, "t": big.t(), "other": ember.ones(3)}, f)
    assert len(f.getvalue()) < 100 * 100 * 8 + 3 * 4 + 2000  # the storage is written once
    f.seek(0)
    r = ember.load(f)
    assert r["col"].tolist() == col.tolist() and r["t"].tolist() == big.t().tolist()
    assert r["t"].stride() == (1, 100) and r["col"].stride() == col.stride()
    r["col"].fill_(-1)  # a view again: the write shows through the other tensor
    assert r["t"][3].tolist() == [-1.0] * 100
    assert big.tolist()[5][3] == 503.0


def test_shared_view_entries_are_validated():
    b = ember.arange(6.0)
    f = io.BytesIO()
    ember.save([b, b[2:4]], f)
    raw = f.getvalue()
    bad = raw.replace(b'\\"offset\\":2', b'\\"offset\\":9')
    assert bad != raw
    with pytest.raises(RuntimeError, match="checksum mismatch in the header"):
        ember.load(io.BytesIO(bad))
    # a header whose checksum matches (a hostile writer recomputes it) is validated too
    with pytest.raises(RuntimeError, match="reaches element"):
        ember.load(io.BytesIO(_rechecksummed(bad)))


_rechecksummed = rechecksummed


def test_deepcopy_and_pickle_keep_views_shared():
    import copy
    import pickle
    b = ember.arange(6.0)
    for r in (copy.deepcopy([b, b[2:4]]), pickle.loads(pickle.dumps([b, b[2:4]]))):
        r[1].fill_(-1)
        assert r[0].tolist() == [0.0, 1.0, -1.0, -1.0, 4.0, 5.0]
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    p = ember.ones(2, requires_grad=True)
    q = pickle.loads(pickle.dumps(p))
    assert q.requires_grad and q.is_leaf


def test_paths_and_file_objects(tmp_path):
    t = T([1, 2, 3], np.int32)
    p = tmp_path / "x.ember"
    ember.save(t, p)
    same(ember.load(p), t)
    ember.save({"a": t}, str(p))
    same(ember.load(str(p))["a"], t)
    with open(p, "wb") as fh:
        ember.save([t], fh)
    with open(p, "rb") as fh:
        same(ember.load(fh)[0], t)

    class Stream:  # read() only: no seek, tell or readinto
        def __init__(self, data):
            self.b = io.BytesIO(data)

        def read(self, n=-1):
            return self.b.read(n)

    f = io.BytesIO()
    ember.save({"a": t}, f)
    same(ember.load(Stream(f.getvalue()))["a"], t)
    with pytest.raises(TypeError, match="f must be a path or a binary file object"):
        ember.save(t, 123)
    with pytest.raises(TypeError, match="f must be a path or a binary file object"):
        ember.load(3.5)


def test_file_is_safetensors_layout():
    f = io.BytesIO()
    ember.save({"a": T([[1.0, 2.0]], np.float32), "n": 3}, f)
    data = f.getvalue()
    n = struct.unpack("<Q", data[:8])[0]
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    assert header["a"] == {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}
    assert header["__metadata__"]["format"] == "ember"
    assert np.frombuffer(data[8 + n:], np.float32).tolist() == [1.0, 2.0]


def test_plain_safetensors_file_loads_as_dict():
    data = _file({"x": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]},
                  "y": {"dtype": "BF16", "shape": [], "data_offsets": [4, 6]}},
                 np.array([7, -8], np.int16).tobytes() + b"\x80\x3f")
    r = ember.load(io.BytesIO(data))
    assert list(r) == ["x", "y"]
    assert r["x"].tolist() == [7, -8] and r["y"].dtype == ember.bfloat16 and r["y"].item() == 1.0


# ---- map_location / weights_only -----------------------------------------------------------

def test_map_location_variants():
    t = T([1.0, 2.0], np.float32)
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}):
        same(roundtrip({"t": t}, map_location=ml)["t"], t)
    seen = []

    def fn(tensor, location):
        seen.append(location)
        return tensor * 2

    assert roundtrip([t], map_location=fn)[0].tolist() == [2.0, 4.0] and seen == ["cpu"]
    same(roundtrip(t, map_location=lambda s, loc: None), t)
    with pytest.raises(TypeError, match="map_location must be None, a string"):
        roundtrip(t, map_location=3)
    with pytest.raises(TypeError, match="map_location returned int, not a Tensor"):
        roundtrip(t, map_location=lambda s, loc: 1)
    with pytest.raises(RuntimeError, match="invalid device 'tpu'"):
        roundtrip(t, map_location="tpu")


def test_cuda_locations_without_a_gpu():
    # A file saved from a GPU machine: the structure records the tensor's device.
    meta = {"format": "ember", "version": "1",
            "structure": json.dumps({"tensor": "t", "device": "cuda:0"})}
    data = _file({"__metadata__": meta, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                 np.float32(1.5).tobytes())
    same(ember.load(io.BytesIO(data), map_location="cpu"), T([1.5], np.float32))
    same(ember.load(io.BytesIO(data), map_location={"cuda:0": "cpu"}), T([1.5], np.float32))
    if not ember.cuda.is_available():
        msg = ("Attempting to deserialize object on a CUDA device but ember.cuda.is_available\\(\\) "
               "is False")
        with pytest.raises(RuntimeError, match=msg):
            ember.load(io.BytesIO(data))
        with pytest.raises(RuntimeError, match=msg):
            roundtrip(T([1.0]), map_location="cuda")
    else:
        assert ember.load(io.BytesIO(data)).device.type == "cuda"


class Custom:
    def __init__(self, v):
        self.v = v


def test_arbitrary_objects_need_weights_only_false():
    obj = {"cfg": Custom(3), "t": T([1, 2])}
    f = io.BytesIO()
    ember.save(obj, f)
    for wo in (None, True):
        f.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*weights_only=False"):
            ember.load(f, weights_only=wo)
    f.seek(0)
    r = ember.load(f, weights_only=False)
    assert r["cfg"].v == 3 and r["t"].tolist() == [1, 2]
    f.seek(0)
    assert ember.load(f, weights_only=False, map_location=lambda s, loc: s + 1)["t"].tolist() == [2, 3]
    # A safe file loads under every weights_only setting.
    assert roundtrip([1, T(2)], weights_only=False)[0] == 1


class _Evil:
    def __reduce__(self):
        return (_mark_executed, ())


_EXECUTED = []


def _mark_executed():
    _EXECUTED.append(1)
    return "pwned"


def test_loading_never_runs_code_by_default():
    payload = serialization.EMBER_PICKLE_MAGIC + pickle.dumps({"x": _Evil()})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(io.BytesIO(payload))
    raw_pickle = pickle.dumps(_Evil())  # a bare pickle file is not an ember file at all
    with pytest.raises(RuntimeError, match="invalid file"):
        ember.load(io.BytesIO(raw_pickle))
    assert _EXECUTED == []


# ---- malformed files -------------------------------------------------------------------------

def _file(header, data=b"", n=None):
    hb = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(hb) if n is None else n) + hb + data


def _entry(dtype="F32", shape=(2,), offs=(0, 8)):
    return {"dtype": dtype, "shape": shape if isinstance(shape, str) else list(shape),
            "data_offsets": list(offs)}


MALFORMED = [
    ("empty file", b"", "fewer than the 8-byte header length"),
    ("short length", b"\x01\x02\x03", "fewer than the 8-byte header length"),
    ("huge header length", _file(b"{}", n=2 ** 64 - 1), "exceeds the limit of 104857600 bytes"),
    ("header over cap", _file(b"{}", n=200 * 1024 * 1024), "exceeds the limit"),
    ("header past end", _file(b"{}", n=1000), "header length 1000 exceeds the 2 bytes that follow"),
    ("non utf8", _file(b'{"\xff": 1}'), "header is not valid UTF-8"),
    ("non json", _file(b"{not json"), "header is not valid JSON"),
    ("json list", _file(b"[1, 2]"), "header must be a JSON object, got list"),
    ("nan constant", _file(b'{"a": NaN}'), "non-finite number NaN"),
    ("duplicate key", _file(b'{"a": {}, "a": {}}'), "duplicate key 'a'"),
    ("deep nesting", _file(b"[" * 100000 + b"]" * 100000), "nested too deeply|not valid JSON"),
    ("bad dtype", _file({"a": _entry(dtype="C64")}, bytes(8)), "unsupported dtype 'C64'"),
    ("dtype not str", _file({"a": _entry(dtype=4)}, bytes(8)), "unsupported dtype 4"),
    ("entry not object", _file({"a": [1]}), "header entry 'a' must be an object"),
    ("missing key", _file({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "missing \\['data_offsets'\\]"),
    ("unknown key", _file({"a": dict(_entry(), extra=1)}, bytes(8)), "unknown \\['extra'\\]"),
    ("negative dim", _file({"a": _entry(shape=[-2])}, bytes(8)), "non-negative integers"),
    ("float dim", _file({"a": _entry(shape=[2.0])}, bytes(8)), "non-negative integers"),
    ("bool dim", _file({"a": _entry(shape=[True, 2])}, bytes(8)), "non-negative integers"),
    ("shape not list", _file({"a": _entry(shape="2")}, bytes(8)), "shape must be a list"),
    ("too many dims", _file({"a": _entry(shape=[1] * 65)}, bytes(8)), "at most 64"),
    ("giant dim", _file({"a": _entry(shape=[2 ** 64, 0], offs=(0, 0))}), "non-negative integers"),
    ("offsets not ints", _file({"a": _entry(offs=(0, 8.0))}, bytes(8)), "two integers"),
    ("offsets len", _file({"a": _entry(offs=(0,))}, bytes(8)), "two integers"),
    ("offsets reversed", _file({"a": _entry(offs=(8, 0))}, bytes(8)), "0 <= begin <= end"),
    ("offset negative", _file({"a": _entry(offs=(-8, 0))}, bytes(8)), "0 <= begin <= end"),
    ("size mismatch", _file({"a": _entry(shape=[3])}, bytes(8)),
     "shape \\[3\\] of float32 needs 12 bytes but data_offsets \\[0, 8\\] hold 8"),
    ("overflowing shape", _file({"a": _entry(shape=[2 ** 62, 2 ** 62], offs=(0, 8))}, bytes(8)),
     "needs 85070591730234615865843651857942052864 bytes"),
    ("lying offsets", _file({"a": _entry(shape=[2 ** 40], offs=(0, 2 ** 42))}, bytes(8)),
     "truncated: the tensors need 4398046511104 bytes of data but the file holds 8"),
    ("overlap", _file({"a": _entry(), "b": _entry(offs=(4, 12))}, bytes(12)), "overlap the previous tensor"),
    ("same range", _file({"a": _entry(), "b": _entry()}, bytes(8)), "overlap the previous tensor"),
    ("gap", _file({"a": _entry(offs=(8, 16))}, bytes(16)), "leaving a gap after 0"),
    ("trailing bytes", _file({"a": _entry()}, bytes(12)), "4 unexpected bytes after the last tensor"),
    ("truncated data", _file({"a": _entry()}, bytes(5)), "truncated: the tensors need 8 bytes"),
    ("metadata not str", _file({"__metadata__": {"format": 1}}), "__metadata__ must be an object mapping"),
]


def _ember_file(structure, entries=None, data=b"", version="1"):
    meta = {"format": "ember", "version": version,
            "structure": structure if isinstance(structure, str) else json.dumps(structure)}
    return _file(dict({"__metadata__": meta}, **(entries or {})), data)


MALFORMED += [
    ("missing tensor", _ember_file({"tensor": "nope", "device": "cpu"}), "refers to a tensor 'nope'"),
    ("structure non json", _ember_file("{oops"), "the structure metadata is not valid JSON"),
    ("unknown tag", _ember_file({"sett": [1]}), "unknown tag 'sett'"),
    ("raw list", _ember_file([1, 2]), "unexpected list in the structure"),
    ("raw float", _ember_file({"list": [1.5]}), "unexpected float in the structure"),
    ("bad float", _ember_file({"float": "1.5x"}), "invalid float '1.5x'"),
    ("bad pair", _ember_file({"dict": [[1]]}), "dict items must be \\[key, value\\] pairs"),
    ("unhashable key", _ember_file({"dict": [[{"list": []}, 1]]}), "unhashable dict key of type list"),
    ("deep structure", _ember_file('{"list":[' * 300 + "]}" * 300), "nested deeper than 200 levels"),
    ("bad device", _ember_file({"tensor": "t", "device": 3}, {"t": _entry()}, bytes(8)),
     "device must be a string"),
    ("future version", _ember_file(None, version="9"), "unsupported ember format version '9'"),
]


@pytest.mark.parametrize("name,data,msg", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_raise_clear_errors(name, data, msg):
    with pytest.raises(RuntimeError, match="ember.load: invalid file: .*(" + msg + ")"):
        ember.load(io.BytesIO(data))


@pytest.mark.parametrize("cut", [3, 8, 20, -5, -1])
def test_truncated_real_file(cut, tmp_path):
    f = io.BytesIO()
    ember.save({"a": T(np.arange(10.0)), "b": [T([1, 2, 3])]}, f)
    p = tmp_path / "cut.ember"
    p.write_bytes(f.getvalue()[:cut])
    with pytest.raises(RuntimeError, match="ember.load: invalid file: .*(truncated|exceeds|fewer)"):
        ember.load(p)


def test_random_corruption_never_crashes():
    f = io.BytesIO()
    ember.save({"a": T(np.arange(6.0).reshape(2, 3)), "b": [1, 2.5, "s", T([True])]}, f)
    good = f.getvalue()
    rng = random.Random(0)
    outcomes = collections.Counter()
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data))]
        try:
            ember.load(io.BytesIO(bytes(data)))
            outcomes["ok"] += 1
        except RuntimeError as e:
            assert str(e).startswith("ember.load: invalid file: ")
            outcomes["error"] += 1
    assert outcomes["error"] > 0
