"""The C++ layers include only downwards (docs/ARCHITECTURE.md, "Layers"):

core/      includes only core/
kernels/   includes only core/ and kernels/
backends/  include only core/, kernels/ and their own backends/ headers (never ops/ front-ends,
           autograd or the bindings), so a backend sees the backend-neutral kernel layer only.
ops/       the front-ends: core/, kernels/, autograd/ (recording) and ops/, never the bindings
           (python/), a backend or the DataLoader's data/; the C++ API (and the C++ JIT
           runtime) has every op's semantics without Python.
autograd/  core/, kernels/, ops/ (formulas are ember ops) and autograd/.
data/      core/, ops/ and data/.
jit/       the graph IR, tracer, interpreter, passes and archive: core/, kernels/, autograd/,
           ops/, data/ (CRC-32C for the archive's checksum) and jit/. Its trace hook
           (jit/trace_hook.h, jit/trace_elementwise.h) is the one jit header ops/ and
           autograd/ include: the tracer records at the op front-end's entry (DESIGN.md).
api/       the C++ API's conveniences (<ember/ember.h>): core/, autograd/, ops/ and api/.
python/    the bindings: anything but a backend's kernels (argument conversion only; the op
           semantics live in ops/).
And nothing below python/ includes pybind11 or Python.h (the _C_cuda module aside).
distributed/  (process groups, stores, the DDP reducer) sits beside autograd: it may use the
           front-ends, autograd and, for the nccl backend, the CUDA backend's runtime header,
           never the bindings.

A source grep: it needs no build and fails naming the file and line that breaks the rule.
KNOWN lists the includes that still break it, each with its reason; an entry that no longer
breaks the rule fails too, so the list only shrinks."""
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "csrc" / "ember"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]ember/([a-z_]+)/', re.M)

ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "backends": {"core", "kernels", "backends"},
    "ops": {"core", "kernels", "autograd", "ops", "jit"},
    "autograd": {"core", "kernels", "autograd", "ops", "jit"},
    "data": {"core", "ops", "data"},
    "jit": {"core", "kernels", "autograd", "ops", "data", "jit"},
    "api": {"core", "kernels", "autograd", "ops", "api"},
    "python": {"core", "kernels", "autograd", "ops", "data", "distributed", "jit", "api",
               "python"},
    "distributed": {"core", "kernels", "ops", "autograd", "backends", "distributed"},
}
# What a layer below jit/ may include from it: the trace hook only.
JIT_HOOKS = {"ember/jit/trace_hook.h", "ember/jit/trace_elementwise.h"}
JIT_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](ember/jit/[^">]+)[">]', re.M)

# file -> the layers it may still include against the rule, and why.
KNOWN = {
    # The host<->device copy stages through the copy_ front-end (a cast on one side,
    # then one contiguous transfer); it needs a kernel-level cast entry point first.
    "backends/cuda/copy_fill.cu": {"ops"},
    # The _C_cuda Python module (bindings, not a kernel) binds pin_memory/is_pinned to the
    # one pinned host allocator of data/pinned.h.
    "backends/cuda/module.cpp": {"data"},
    # The cuSOLVER SVD lays gesvdj's V out as LAPACK's V^T, and a tall/wide input as its
    # transpose, with strided device copies of views (copy_, transpose, narrow), as
    # copy_fill.cu does; a kernel-level strided copy entry point would remove both.
    "backends/cuda/linalg.cu": {"ops"},
    # Backend switches and queries bound as they are (no op semantics): the chosen CPU
    # capability, the BLAS's identity and on/off switch, the direct convolution switch.
    "python/module.cpp": {"backends"},
    "python/linalg.cpp": {"backends"},
    "python/nn_conv.cpp": {"backends"},
}
PYTHON_API = re.compile(r'^\s*#\s*include\s*[<"](pybind11/|Python\.h)', re.M)


def _sources(layer, src=SRC):
    root = src / layer
    return sorted(p for p in root.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh", ".def"})


def _violations(layer, src=SRC, known=None):
    known = KNOWN if known is None else known
    bad = []
    for path in _sources(layer, src):
        text = path.read_text()
        rel = str(path.relative_to(src))
        for m in INCLUDE.finditer(text):
            if m.group(1) not in ALLOWED[layer] | known.get(rel, set()):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path.relative_to(src)}:{line}: includes ember/{m.group(1)}/")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_includes_only_below(layer):
    assert _sources(layer), f"no sources under {SRC / layer}"
    bad = _violations(layer)
    assert not bad, f"{layer}/ may include only {sorted(ALLOWED[layer])}:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", ["ops", "autograd"])
def test_front_ends_include_only_the_trace_hook_from_jit(layer):
    bad = []
    for path in _sources(layer):
        text = path.read_text()
        for m in JIT_INCLUDE.finditer(text):
            if m.group(1) not in JIT_HOOKS:
                bad.append(f"{path.relative_to(SRC)}:{text.count(chr(10), 0, m.start()) + 1}: "
                           f"includes {m.group(1)}")
    assert not bad, f"{layer}/ may include only {sorted(JIT_HOOKS)} from jit/:\n" + "\n".join(bad)


def test_known_exceptions_still_needed():
    for rel, layers in KNOWN.items():
        text = (SRC / rel).read_text()
        used = {m.group(1) for m in INCLUDE.finditer(text)}
        assert layers <= used, f"{rel} no longer includes {sorted(layers - used)}: drop it from KNOWN"


def test_grep_sees_a_violation(tmp_path):
    # The rule must be able to fail: a core file including autograd is reported.
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "x.cpp").write_text(
        '#include "ember/core/tensor.h"\n#include "ember/autograd/grad_mode.h"\n')
    assert _violations("core", tmp_path, {}) == ["core/x.cpp:2: includes ember/autograd/"]
    (tmp_path / "backends" / "cpu").mkdir(parents=True)
    (tmp_path / "backends" / "cpu" / "k.cpp").write_text('#include "ember/ops/reduce.h"\n')
    assert _violations("backends", tmp_path, {}) == ["backends/cpu/k.cpp:1: includes ember/ops/"]


# Extension modules outside python/ (binding files by nature): _C_cuda and _C_gloo.
EXTENSION_MODULES = {"backends/cuda/module.cpp", "distributed/gloo/module.cpp"}


def test_no_python_below_the_bindings():
    """Op semantics must not depend on Python: no layer below python/ includes pybind11 or
    Python.h (the _C_cuda and _C_gloo extension modules are binding files)."""
    bad = []
    for path in sorted(p for p in SRC.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh"}):
        rel = str(path.relative_to(SRC))
        if rel.startswith("python/") or rel in EXTENSION_MODULES:
            continue
        text = path.read_text()
        for m in PYTHON_API.finditer(text):
            bad.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}")
    assert not bad, "Python API included below the bindings:\n" + "\n".join(bad)
