"""ember.save / ember.load under failure and in PyTorch's company (issue 24, items 7, 8, 16,
17, 18 and the weights-only allowlist): atomic saves, checksums, the values the safe format
holds, safe globals and the environment switches, and PyTorch's zip checkpoints both ways
(with PyTorch's interpreter from torch_python, in a subprocess, when present)."""
import collections
import io
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import zipfile

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import serialization


def _torch_available():
    if TORCH_PY is None:
        return False
    try:
        return subprocess.run([TORCH_PY, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_torch = pytest.mark.skipif(not _torch_available(),
                                 reason="PyTorch not installed")


def roundtrip(obj, **kw):
    f = io.BytesIO()
    ember.save(obj, f)
    f.seek(0)
    return ember.load(f, **kw)


# ---- 7. a failed or killed save never destroys the previous file ------------------------------

class Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot pickle this")


def test_failed_save_keeps_the_old_file(tmp_path):
    p = tmp_path / "ckpt.pt"
    ember.save({"w": ember.arange(5.0)}, p)
    good = p.read_bytes()
    with pytest.raises(TypeError, match="cannot pickle"):
        ember.save({"w": ember.ones(2), "bad": Unpicklable()}, p)
    with pytest.raises((TypeError, pickle.PicklingError)):
        ember.save({"lock": threading.Lock()}, p)
    assert p.read_bytes() == good
    assert ember.load(p)["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pt"]  # no temporary left behind
    f = io.BytesIO(b"keep")  # a file object is left untouched too
    f.seek(4)
    with pytest.raises(TypeError):
        ember.save(Unpicklable(), f)
    assert f.getvalue() == b"keep"


def test_save_keeps_mode_and_writes_through_symlinks(tmp_path):
    p = tmp_path / "a.pt"
    ember.save([1], p)
    os.chmod(p, 0o640)
    ember.save([2], p)
    assert os.stat(p).st_mode & 0o777 == 0o640 and ember.load(p) == [2]
    link = tmp_path / "link.pt"
    os.symlink(p, link)
    ember.save([3], link)
    assert os.path.islink(link) and ember.load(p) == [3]
    ember.save([4], os.devnull)  # not a regular file: written directly, not replaced
    assert not os.path.isfile(os.devnull)


def test_an_interrupted_save_leaves_the_old_file_loadable(tmp_path):
    """A child saving a large checkpoint is killed at a random moment of its write; the old
    file must still load (the fuzz stage repeats this at many cut points)."""
    p = tmp_path / "ckpt.ember"
    ember.save({"step": 1, "w": ember.ones(10)}, p)
    code = textwrap.dedent(f"""
        import ember, sys
        big = {{"step": 2, "w": ember.ones(8_000_000)}}
        print("ready", flush=True)
        while True:
            ember.save(big, {str(p)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    import time
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    r = ember.load(p)
    assert r["step"] in (1, 2) and r["w"].numel() in (10, 8_000_000)
    assert all(not n.endswith(".tmp") or n.startswith(".") for n in os.listdir(tmp_path))


def test_truncated_pickle_is_not_sent_to_weights_only_false():
    f = io.BytesIO()
    ember.save({"cfg": collections.Counter("aab"), "t": ember.ones(3)}, f)
    data = f.getvalue()
    assert data.startswith(serialization.EMBER_PICKLE_MAGIC) or b"ember" in data[:200]
    blob = serialization.EMBER_PICKLE_MAGIC + pickle.dumps({"s": {1, 2}, "t": ember.ones(3)})
    for cut in (len(serialization.EMBER_PICKLE_MAGIC) + 3, len(blob) // 2, len(blob) - 1):
        with pytest.raises(RuntimeError, match="truncated or corrupt") as e:
            ember.load(io.BytesIO(blob[:cut]))
        assert "weights_only=False" not in str(e.value)


# ---- 8. checksums -------------------------------------------------------------------------------

def _saved(obj):
    f = io.BytesIO()
    ember.save(obj, f)
    return f.getvalue()


def test_checksums_are_written_and_checked():
    data = _saved({"w": ember.arange(100.0), "b": ember.ones(3, dtype=ember.int64), "lr": 0.1})
    n = struct.unpack("<Q", data[:8])[0]
    import json
    meta = json.loads(data[8:8 + n])["__metadata__"]
    assert meta["version"] == "2" and len(meta["data_crc32c"]) == 8 and len(meta["header_crc32c"]) == 8
    body = bytearray(data)
    body[8 + n + 17] ^= 0x01  # one bit of one weight
    with pytest.raises(RuntimeError, match="ember.load: invalid file: checksum mismatch in the tensor data"):
        ember.load(io.BytesIO(bytes(body)))
    head = data[8:8 + n].decode()
    i = head.index('"lr')  # the float's value lives in the structure: flip a digit of it
    j = head.index("0.1", i) if "0.1" in head[i:] else None
    if j is None:
        j = head.index("0.1")
    changed = data[:8] + head[:j].encode() + b"0.3" + head[j + 3:].encode() + data[8 + n:]
    with pytest.raises(RuntimeError, match="checksum mismatch in the header"):
        ember.load(io.BytesIO(changed))


def test_every_single_data_flip_is_caught():
    data = _saved({"a": ember.arange(6.0).reshape(2, 3), "b": ember.tensor([1, 2], dtype=ember.int8)})
    n = struct.unpack("<Q", data[:8])[0]
    for pos in range(8 + n, len(data)):
        for bit in (0, 7):
            b = bytearray(data)
            b[pos] ^= 1 << bit
            with pytest.raises(RuntimeError, match="checksum mismatch"):
                ember.load(io.BytesIO(bytes(b)))


def test_version_1_files_without_checksums_still_load():
    import json
    structure = json.dumps({"dict": [["x", {"tensor": "x", "device": "cpu"}]]})
    header = {"__metadata__": {"format": "ember", "version": "1", "structure": structure},
              "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    hb = json.dumps(header).encode()
    data = struct.pack("<Q", len(hb)) + hb + np.array([1, 2], np.float32).tobytes()
    assert ember.load(io.BytesIO(data))["x"].tolist() == [1.0, 2.0]


def test_crc32c_known_value_and_streaming():
    assert ember._C._crc32c(b"123456789") == 0xE3069283
    data = np.random.default_rng(0).integers(0, 256, 100_003, dtype=np.uint8)
    whole = ember._C._crc32c(data)
    part = ember._C._crc32c(data[50_001:], ember._C._crc32c(data[:50_001]))
    assert whole == part == ember._C._crc32c(data.tobytes())


# ---- 16 / 17. values the safe format holds -----------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


def test_values_pytorch_weights_only_accepts_stay_in_the_safe_format():
    obj = {
        "size": ember.Size([2, 3]), "set": {1, 2, "a"}, "frozen": frozenset({(1, 2)}),
        "bytes": b"\x00\xffabc", "ba": bytearray(b"xy"), "c": complex(1.5, -2.0),
        "cinf": complex(float("inf"), 0.0), "dtype": ember.bfloat16, "dev": ember.device("cpu"),
        "cuda_dev": ember.device("cuda", 1), "od": collections.OrderedDict(a=1),
        "nt": Point(ember.ones(2), 3), "ret": ember.ones(3, 2).max(0),
        ember.float16: "dtype as key", ("t", 1): None,
    }
    data = _saved(obj)
    assert not data.startswith(serialization.EMBER_PICKLE_MAGIC)  # the safe format, not pickle
    r = ember.load(io.BytesIO(data))  # default weights_only
    assert type(r["size"]) is ember.Size and r["size"] == (2, 3)
    assert r["set"] == {1, 2, "a"} and r["frozen"] == frozenset({(1, 2)})
    assert r["bytes"] == b"\x00\xffabc" and type(r["ba"]) is bytearray and r["ba"] == b"xy"
    assert r["c"] == complex(1.5, -2.0) and r["cinf"].real == float("inf")
    assert r["dtype"] is ember.bfloat16 and r["dev"] == ember.device("cpu")
    assert r["cuda_dev"] == ember.device("cuda", 1)
    assert type(r["od"]) is collections.OrderedDict
    assert r["nt"].x.tolist() == [1.0, 1.0] and r["nt"].y == 3 and r["nt"]._fields == ("x", "y")
    assert type(r["ret"]) is type(ember.ones(3, 2).max(0))
    assert r[ember.float16] == "dtype as key" and r[("t", 1)] is None


def test_namedtuple_class_comes_from_safe_globals_when_allowed():
    r = roundtrip({"p": Point(1, 2)})["p"]
    assert type(r) is not Point and type(r).__name__ == "Point" and r == (1, 2)
    with serialization.safe_globals([Point]):
        assert type(roundtrip({"p": Point(1, 2)})["p"]) is Point
    assert Point not in serialization.get_safe_globals()


def test_modules_holding_devices_deepcopy_and_save():
    import copy

    class EMA(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ember.nn.Linear(2, 2)
            self.device = ember.device("cpu")
    m = copy.deepcopy(EMA())
    assert m.device == ember.device("cpu")
    r = roundtrip({"device": ember.device("cpu"), "state": m.state_dict()})
    assert r["device"] == ember.device("cpu") and set(r["state"]) == {"inner.weight", "inner.bias"}


# ---- the weights-only allowlist and the environment switches -----------------------------------

class Config:
    def __init__(self, lr):
        self.lr = lr


def test_safe_globals_api():
    serialization.clear_safe_globals()
    f = io.BytesIO()
    ember.save({"cfg": Config(0.5), "w": ember.ones(2)}, f)
    data = f.getvalue()
    assert data.startswith(serialization.EMBER_PICKLE_MAGIC)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL .*Config.*add_safe_globals"):
        ember.load(io.BytesIO(data))
    assert serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [
        f"{__name__}.Config"]
    with serialization.safe_globals([Config]):
        assert serialization.get_safe_globals() == [Config]
        r = ember.load(io.BytesIO(data))
        assert r["cfg"].lr == 0.5 and r["w"].tolist() == [1.0, 1.0]
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([(Config, f"{__name__}.Config")])
    try:
        assert ember.load(io.BytesIO(data))["cfg"].lr == 0.5
    finally:
        serialization.clear_safe_globals()
    with pytest.raises(TypeError):
        serialization.add_safe_globals([("x", 1)])
    with pytest.raises(ValueError):
        serialization.add_safe_globals([(Config,)])


def test_blocked_modules_stay_blocked():
    import os as os_mod
    blob = serialization.EMBER_PICKLE_MAGIC + pickle.dumps(os_mod.getcwd, protocol=2)
    with serialization.safe_globals([os_mod.getcwd]):
        with pytest.raises(pickle.UnpicklingError, match="blocked|Unsupported"):
            ember.load(io.BytesIO(blob))


def _load_in_child(data, env):
    code = textwrap.dedent("""
        import io, sys, pickle, warnings
        import ember
        data = sys.stdin.buffer.read()
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = ember.load(io.BytesIO(data))
            print("loaded", r["cfg"].__class__.__name__, any("TORCH_FORCE_NO" in str(m.message) for m in w))
        except pickle.UnpicklingError:
            print("refused")
        try:
            ember.load(io.BytesIO(data), weights_only=False)
            print("explicit-false-ok")
        except pickle.UnpicklingError:
            print("explicit-false-refused")
    """)
    e = dict(os.environ, **env)
    p = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, env=e,
                       timeout=120, cwd=os.path.dirname(__file__))
    return p.stdout.decode() + p.stderr.decode()


def test_environment_switches():
    from collections import Counter  # noqa: F401  (allowed anyway)
    blob = serialization.EMBER_PICKLE_MAGIC + pickle.dumps({"cfg": _Plain()}, protocol=2)
    base = {"PYTHONPATH": os.pathsep.join([os.path.dirname(__file__)] + sys.path)}
    out = _load_in_child(blob, base)
    assert "refused" in out and "explicit-false-ok" in out, out
    for var in ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "EMBER_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        out = _load_in_child(blob, dict(base, **{var: "1"}))
        assert "loaded _Plain True" in out, out
    for var in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "EMBER_FORCE_WEIGHTS_ONLY_LOAD"):
        out = _load_in_child(blob, dict(base, **{var: "1"}))
        assert "refused" in out and "explicit-false-refused" in out, out


class _Plain:
    pass


_Plain.__module__ = "test_serialization_safety"


# ---- 18. PyTorch's zip checkpoints ---------------------------------------------------------------

def _torch_zip(obj):
    f = io.BytesIO()
    ember.save(obj, f, format="torch")
    return f.getvalue()


def test_torch_format_round_trips_without_torch():
    sd = collections.OrderedDict(w=ember.arange(6.0).reshape(2, 3), b=ember.ones(3, dtype=ember.bfloat16))
    v = ember.arange(10.0)
    obj = {"sd": sd, "views": [v[2:5], v[::3]], "n": 3, "s": "x", "size": ember.Size([4]),
           "dt": ember.int8, "dev": ember.device("cpu"), "p": ember.nn.Parameter(ember.ones(2))}
    data = _torch_zip(obj)
    assert data.startswith(b"PK\x03\x04")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert {"archive/data.pkl", "archive/byteorder", "archive/version"} <= set(zf.namelist())
    r = ember.load(io.BytesIO(data))
    assert r["sd"]["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and r["sd"]["b"].dtype == ember.bfloat16
    assert r["views"][0].tolist() == [2, 3, 4] and r["views"][1].tolist() == [0, 3, 6, 9]
    assert r["views"][0].data_ptr() - 2 * 4 == r["views"][1].data_ptr()  # one shared storage
    assert type(r["size"]) is ember.Size and r["dt"] is ember.int8 and r["n"] == 3
    assert isinstance(r["p"], ember.nn.Parameter) and r["p"].requires_grad
    assert r["dev"] == ember.device("cpu")


def test_torch_zip_hostile_records_raise():
    good = _torch_zip({"w": ember.arange(4.0)})
    zin = zipfile.ZipFile(io.BytesIO(good))
    names = zin.namelist()

    def rebuilt(replace):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zo:
            for n in names:
                data = zin.read(n)
                data = replace(n, data)
                if data is not None:
                    zo.writestr(n, data)
        return out.getvalue()

    short = rebuilt(lambda n, d: d[:-4] if n.endswith("data/0") else d)
    with pytest.raises(RuntimeError, match="holds 12 bytes, but the pickle declares 4 elements"):
        ember.load(io.BytesIO(short))
    missing = rebuilt(lambda n, d: None if n.endswith("data/0") else d)
    with pytest.raises(RuntimeError, match="storage record .* is missing"):
        ember.load(io.BytesIO(missing))
    nopkl = rebuilt(lambda n, d: None if n.endswith("data.pkl") else d)
    with pytest.raises(RuntimeError, match="no <archive>/data.pkl"):
        ember.load(io.BytesIO(nopkl))
    with pytest.raises(RuntimeError, match="not a readable zip"):
        ember.load(io.BytesIO(good[:40]))
    evil = rebuilt(lambda n, d: pickle.dumps(os.system, protocol=2) if n.endswith("data.pkl") else d)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(io.BytesIO(evil))


def test_legacy_and_foreign_formats_are_named():
    legacy = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b".rest"
    with pytest.raises(RuntimeError, match="legacy format of torch.save before PyTorch 1.6"):
        ember.load(io.BytesIO(legacy))
    with pytest.raises(RuntimeError, match="plain Python pickle"):
        ember.load(io.BytesIO(pickle.dumps([1, 2])))


@needs_torch
def test_pytorch_reads_what_ember_saves(tmp_path):
    sd = collections.OrderedDict(weight=ember.randn(3, 2), bias=ember.arange(3.0),
                                 steps=ember.tensor(7), half=ember.ones(2, dtype=ember.bfloat16))
    tp = tmp_path / "for_torch.pt"
    ember.save({"model": sd, "epoch": 5, "size": ember.Size([3, 2])}, tp, format="torch")
    st = tmp_path / "safetensors.ember"
    ember.save(sd, st)
    code = textwrap.dedent(f"""
        import json, struct, torch
        ck = torch.load({str(tp)!r})  # weights_only=True in PyTorch >= 2.6
        sd = ck["model"]
        print("torch-zip", ck["epoch"], tuple(ck["size"]), sd["weight"].shape == (3, 2),
              sd["bias"].tolist(), sd["steps"].item(), sd["half"].dtype)
        # ember's default files are safetensors: read with plain torch
        raw = open({str(st)!r}, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        codes = {{"F32": torch.float32, "I64": torch.int64, "BF16": torch.bfloat16}}
        out = {{}}
        for k, e in header.items():
            if k == "__metadata__":
                continue
            b, end = e["data_offsets"]
            buf = bytearray(raw[8 + n + b:8 + n + end])
            out[k] = torch.frombuffer(buf, dtype=codes[e["dtype"]]).reshape(e["shape"]) if buf else torch.empty(e["shape"], dtype=codes[e["dtype"]])
        print("safetensors", sorted(out), out["bias"].tolist())
        try:
            import safetensors.torch
            print("lib", sorted(safetensors.torch.load_file({str(st)!r})))
        except ImportError:
            print("lib absent")
    """)
    p = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "torch-zip 5 (3, 2) True [0.0, 1.0, 2.0] 7 torch.bfloat16" in out, out
    assert "safetensors ['bias', 'half', 'steps', 'weight'] [0.0, 1.0, 2.0]" in out, out


@needs_torch
def test_ember_reads_what_pytorch_saves(tmp_path):
    code = textwrap.dedent(f"""
        import collections, torch
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 2)
        base = torch.arange(12.0)
        obj = {{"sd": lin.state_dict(), "epoch": 3, "views": [base[1:4], base[::4]],
               "types": [torch.float16, torch.device("cpu")], "size": torch.Size([2, 5]),
               "param": torch.nn.Parameter(torch.ones(2)), "ints": torch.tensor([1, -2], dtype=torch.int16),
               "bf": torch.tensor([1.5], dtype=torch.bfloat16), "bool": torch.tensor([True, False]),
               "nested": collections.OrderedDict(a=[torch.zeros(0), (torch.ones(1, 1),)])}}
        torch.save(obj, {str(tmp_path / "a.pt")!r})
        torch.save(lin.state_dict(), {str(tmp_path / "sd.pt")!r})
        torch.save(torch.arange(5), {str(tmp_path / "t.pt")!r})
        torch.save(obj, {str(tmp_path / "legacy.pt")!r}, _use_new_zipfile_serialization=False)
        print(lin.weight.detach().numpy().tolist())
    """)
    p = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    weight = eval(p.stdout.strip().splitlines()[-1])
    r = ember.load(tmp_path / "a.pt")
    assert r["epoch"] == 3 and set(r["sd"]) == {"weight", "bias"}
    np.testing.assert_array_equal(r["sd"]["weight"].numpy(), np.array(weight, np.float32))
    assert r["views"][0].tolist() == [1, 2, 3] and r["views"][1].tolist() == [0, 4, 8]
    assert r["views"][0].data_ptr() == r["views"][1].data_ptr() + 4
    assert r["types"][0] is ember.float16 and r["types"][1] == ember.device("cpu")
    assert type(r["size"]) is ember.Size and r["size"] == (2, 5)
    assert isinstance(r["param"], ember.nn.Parameter) and r["param"].requires_grad
    assert r["ints"].dtype == ember.int16 and r["ints"].tolist() == [1, -2]
    assert r["bf"].dtype == ember.bfloat16 and r["bf"].item() == 1.5
    assert r["bool"].tolist() == [True, False]
    assert r["nested"]["a"][0].shape == (0,) and r["nested"]["a"][1][0].tolist() == [[1.0]]
    m = ember.nn.Linear(3, 2)
    m.load_state_dict(ember.load(tmp_path / "sd.pt"))
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.array(weight, np.float32))
    assert ember.load(tmp_path / "t.pt").tolist() == [0, 1, 2, 3, 4]
    assert ember.load(tmp_path / "a.pt", map_location="cpu")["epoch"] == 3
    with pytest.raises(RuntimeError, match="legacy format"):
        ember.load(tmp_path / "legacy.pt")
