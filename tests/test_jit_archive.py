"""ember.jit.save / ember.jit.load: the safe archive (Note [Archive format] in
csrc/ember/jit/archive.h): round trips, validation before anything runs, and the errors
between archives and plain checkpoints."""
import io
import json
import struct

import pytest

import ember
import ember.nn as nn
from ember import _C


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _archive_bytes(m):
    b = io.BytesIO()
    ember.jit.save(m, b)
    return b.getvalue()


def _split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _rewrite(data, edit_program):
    """The archive with its program JSON edited and the checksum recomputed (a well-formed
    file whose content a newer or foreign writer produced)."""
    header, payload = _split(data)
    meta = header["__metadata__"]
    prog = json.loads(meta["program"])
    edit_program(prog)
    text = json.dumps(prog, separators=(",", ":"))
    meta["program"] = text
    import numpy as np
    crc_p = _C._crc32c(np.frombuffer(text.encode(), dtype=np.uint8), 0)
    crc_d = _C._crc32c(np.frombuffer(payload, dtype=np.uint8), 0) if payload else 0
    meta["checksum"] = f"crc32c:{crc_p:08x}:{crc_d:08x}"
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + payload


def test_module_round_trip_file_and_bytes(tmp_path):
    m = _mlp()
    t = ember.jit.trace(m, ember.randn(5, 3))
    p = tmp_path / "m.pt"
    t.save(str(p))
    loaded = ember.jit.load(str(p))
    loaded2 = ember.jit.load(io.BytesIO(_archive_bytes(t)))
    x = ember.randn(7, 3)
    for lm in (loaded, loaded2):
        assert ember.equal(lm(x), m(x))
        assert list(lm.state_dict()) == list(m.state_dict())
        for a, b in zip(lm.parameters(), m.parameters()):
            assert ember.equal(a, b)
    # a loaded module still builds autograd history and trains
    x = ember.randn(2, 3, requires_grad=True)
    out = loaded(x)
    assert out.grad_fn is not None
    out.sum().backward()
    assert x.grad is not None and loaded[0].weight.grad is not None


def test_function_round_trip(tmp_path):
    def f(x, y):
        return (x * y).relu().sum(1)
    t = ember.jit.trace(f, (ember.randn(2, 3), ember.randn(2, 3)))
    p = tmp_path / "f.pt"
    ember.jit.save(t, str(p))
    g = ember.jit.load(str(p))
    assert isinstance(g, ember.jit.ScriptFunction)
    x, y = ember.randn(4, 3), ember.randn(4, 3)
    assert ember.equal(g(x, y), f(x, y))


def test_scripted_control_flow_round_trip(tmp_path):
    def f(x, n: int):
        for _ in range(n):
            if x.sum() > 0:
                x = x - 1
            else:
                x = x * 2
        return x
    s = ember.jit.script(f)
    p = tmp_path / "s.pt"
    s.save(str(p))
    g = ember.jit.load(str(p))
    for v in (ember.tensor([3.0, 1.0]), ember.tensor([-1.0, 0.5])):
        assert ember.equal(g(v, 3), f(v, 3))


def test_archive_is_safetensors_readable_without_pickle():
    data = _archive_bytes(ember.jit.trace(_mlp(), ember.randn(1, 3)))
    header, payload = _split(data)
    meta = header["__metadata__"]
    assert meta["format"] == "ember.jit" and meta["checksum"].startswith("crc32c:")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    assert sorted(v["shape"] for v in tensors.values()) == [[2], [2, 4], [4], [4, 3]]
    assert max(v["data_offsets"][1] for v in tensors.values()) == len(payload)
    prog = json.loads(meta["program"])
    names = {o["name"] for o in prog["ops"]}
    assert {"aten::linear", "aten::relu"} <= names
    assert all(o["version"] >= 1 for o in prog["ops"])
    assert data[8:9] == b"{"  # a JSON header, never a pickle stream (b"\x80")


def test_corrupted_archive_refused():
    data = bytearray(_archive_bytes(ember.jit.trace(_mlp(), ember.randn(1, 3))))
    data[-3] ^= 0x10
    with pytest.raises(RuntimeError, match="checksum does not match"):
        ember.jit.load(io.BytesIO(bytes(data)))
    with pytest.raises(RuntimeError):
        ember.jit.load(io.BytesIO(bytes(data[:20])))


def test_unknown_op_and_newer_version_refused_before_running():
    data = _archive_bytes(ember.jit.trace(_mlp(), ember.randn(1, 3)))

    def unknown(prog):
        for o in prog["ops"]:
            if o["name"] == "aten::relu":
                o["name"] = "aten::not_an_op"
        text = json.dumps(prog).replace('"aten::relu"', '"aten::not_an_op"')
        prog.clear()
        prog.update(json.loads(text))

    with pytest.raises(RuntimeError, match="aten::not_an_op"):
        ember.jit.load(io.BytesIO(_rewrite(data, unknown)))

    def newer(prog):
        for o in prog["ops"]:
            if o["name"] == "aten::linear":
                o["version"] = 99

    with pytest.raises(RuntimeError, match=r"aten::linear.*version 99"):
        ember.jit.load(io.BytesIO(_rewrite(data, newer)))


def test_archive_and_checkpoint_name_each_other(tmp_path):
    m = _mlp()
    arch, ckpt = tmp_path / "a.pt", tmp_path / "c.pt"
    ember.jit.trace(m, ember.randn(1, 3)).save(str(arch))
    ember.save(m.state_dict(), str(ckpt))
    with pytest.raises(RuntimeError, match="ember.jit.load"):
        ember.load(str(arch))
    with pytest.raises(RuntimeError, match="loads with ember.load"):
        ember.jit.load(str(ckpt))
    with pytest.raises(ValueError, match="does not exist"):
        ember.jit.load(str(tmp_path / "missing.pt"))
    with pytest.raises(TypeError, match="ScriptModule"):
        ember.jit.save(m, str(tmp_path / "x.pt"))


def test_extra_files_and_map_location(tmp_path):
    t = ember.jit.trace(_mlp(), ember.randn(1, 3))
    p = tmp_path / "m.pt"
    ember.jit.save(t, str(p), _extra_files={"meta.txt": "hello"})
    extra = {"meta.txt": ""}
    loaded = ember.jit.load(str(p), map_location="cpu", _extra_files=extra)
    assert extra["meta.txt"] == "hello"
    assert all(q.device.type == "cpu" for q in loaded.parameters())


def test_loaded_module_api(tmp_path):
    t = ember.jit.trace(_mlp(), ember.randn(1, 3))
    p = tmp_path / "m.pt"
    t.save(str(p))
    m = ember.jit.load(str(p))
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "2"]
    m.eval()
    assert not m.training and not m[0].training
    m.train()
    assert m.training
    assert "aten::linear" in str(m[0].graph)
    m2 = m.double()
    assert m2(ember.randn(2, 3, dtype=ember.float64)).dtype == ember.float64
