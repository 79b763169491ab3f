"""The committed type stubs (python/ember/_C.pyi, _ops.pyi) match the built bindings, cover
every binding, and type-check a sample under mypy."""
import ast
import importlib.util
import os
import sys
import textwrap
import types

import pytest

import ember
from ember import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.dirname(os.path.abspath(ember.__file__))
REGEN = "run `PYTHONPATH=python python3 tools/gen_stubs.py` after a build and commit the result"


def _gen_stubs():
    path = os.path.join(ROOT, "tools", "gen_stubs.py")
    spec = importlib.util.spec_from_file_location("gen_stubs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _read(name):
    path = os.path.join(PKG, name)
    assert os.path.exists(path), f"{path} is missing: {REGEN}"
    with open(path) as f:
        return f.read()


def _stub_tree():
    return ast.parse(_read("_C.pyi"))


def test_stubs_are_up_to_date():
    for path, text in _gen_stubs().generate():
        with open(path) as f:
            committed = f.read()
        if committed != text:
            import difflib
            diff = difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                        "committed", "generated")
            pytest.fail(f"{os.path.basename(path)} is stale (the bindings changed): {REGEN}\n"
                        + "".join(list(diff)[:40]))


def test_stubs_parse_and_py_typed():
    _stub_tree()
    ast.parse(_read("_ops.pyi"))
    assert os.path.exists(os.path.join(PKG, "py.typed"))


def _defined(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_every_binding_is_in_the_stub():
    tree = _stub_tree()
    top = _defined(tree.body)
    missing = [n for n in dir(_C) if not (n.startswith("__") and n.endswith("__")) and n not in top]
    assert not missing, f"_C names missing from _C.pyi: {missing}; {REGEN}"
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    members = _defined(tensor.body)
    skip = {"__dict__", "__doc__", "__module__", "__weakref__", "_pybind11_conduit_v1_"}
    missing = [n for n in vars(_C.Tensor) if n not in skip and n not in members]
    assert not missing, f"Tensor members missing from _C.pyi: {missing}; {REGEN}"
    # The Python-side additions (python/ember/_tensor.py, _storage.py, autograd) are there too.
    for n in ("__repr__", "__iter__", "__bool__", "storage", "layout", "backward"):
        assert n in members
    # Submodules become namespace classes with every function.
    for n, v in vars(_C).items():
        if isinstance(v, types.ModuleType):
            cls = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == n)
            fns = [f for f in dir(v) if not f.startswith("__") and callable(getattr(v, f))]
            assert set(fns) <= _defined(cls.body), n


def test_stub_signatures_are_typed():
    text = _read("_C.pyi")
    # Typed properties and methods, builtins protected from shadowing by Tensor.float etc.
    assert "def shape(self) -> _Size: ..." in text
    assert "def requires_grad(self) -> builtins.bool: ..." in text
    assert "def __add__(self, " in text and "-> Tensor" in text
    assert "def grad(self) -> Tensor | None: ..." in text
    ops = _read("_ops.pyi")
    assert "from ._C import randn as randn" in ops and "def where(" in ops


SAMPLE = """
import ember
import ember.nn as nn

a = ember.randn(3, 4, requires_grad=True)
b = ember.ones(3, 4) * 2.0 + 1
c: ember.Tensor = (a + b) @ b.T - a / 3
d = c.sum(dim=0).mean()
d.backward()
g = a.grad
shape: ember.Size = a.shape
n: int = a.ndim + a.dim() + a.numel() + shape[0]
dt: ember.dtype = a.dtype
x = ember.zeros(2, 3, dtype=ember.float64).relu().exp().reshape(3, 2)
y = ember.tensor([1.0, 2.0]).to(ember.float32)
z = ember.arange(10).view(2, 5)[0]
f: float = float(x.sum()) + x.sum().item()
lin = nn.Linear(4, 2)
out = lin(a)
loss = out.pow(2).sum()
loss.backward()
with ember.no_grad():
    w = lin.weight * 0.5
for row in x:
    print(row.shape)
print(c, d, g, n, dt, y, z, f, w, ember.where(a > 0, a, b))
"""


def _mypy(tmp_path, monkeypatch, source):
    api = pytest.importorskip("mypy.api", reason="mypy is not installed")
    script = tmp_path / "sample.py"
    script.write_text(textwrap.dedent(source))
    parent = os.path.dirname(PKG)
    if "site-packages" not in parent and "dist-packages" not in parent:
        monkeypatch.setenv("MYPYPATH", parent)  # a checkout: PYTHONPATH=python
    return api.run([str(script), "--follow-imports=silent", "--no-error-summary",
                    "--cache-dir", str(tmp_path / "cache"), "--python-executable", sys.executable])


def test_mypy_accepts_sample(tmp_path, monkeypatch):
    out, err, status = _mypy(tmp_path, monkeypatch, SAMPLE)
    assert status == 0, out + err


def test_mypy_sees_the_types(tmp_path, monkeypatch):
    # The stub is really used: a typo'd method and a wrong-typed property are errors.
    out, err, status = _mypy(tmp_path, monkeypatch, """
        import ember
        a = ember.randn(2, 3)
        reveal_type(a + 1)
        reveal_type(a.shape)
        a.no_such_method()
        s: str = a.ndim
    """)
    assert status == 1, out + err
    assert 'Revealed type is "ember._C.Tensor"' in out, out
    assert 'Revealed type is "ember._size.Size"' in out, out
    assert '"Tensor" has no attribute "no_such_method"' in out, out
    assert "Incompatible types in assignment" in out, out
