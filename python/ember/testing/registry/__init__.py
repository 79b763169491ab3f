"""The general op registry: one ``OpEntry`` per public op, with sample inputs,
the dtypes it supports, a NumPy reference and its error cases.

``tests/test_registry.py`` drives every entry through the same generic tests:
forward against the reference for each dtype and device, ``gradcheck`` and
``gradgradcheck`` in float64 for differentiable entries, and the error cases.
The elementwise table (``opinfo.op_db``) predates this registry and keeps its
own generic tests (tests/test_elementwise.py); its names count as registered.

Entries live in one module per family (``registry/<family>.py``), each with a
module-level ``ENTRIES`` list. ``import ember`` does not build the registry:
``all_entries()`` imports the family modules on first use.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Sample:
    """One call: ``op(*args, **kwargs)``. Tensors among ``args`` (also inside
    lists/tuples) are the inputs that gradcheck perturbs when they are floating."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    desc: str = ""


@dataclass
class ErrorCase:
    """A call that must raise ``exc`` with a message matching ``match`` (re.search)."""
    args: tuple
    kwargs: dict
    exc: type
    match: str


@dataclass
class OpEntry:
    #: public name as a user spells it: "reshape", "Tensor.unfold", "nn.functional.conv2d",
    #: "linalg.solve".
    name: str
    #: the callable under test
    op: Callable
    #: samples(device, dtype) -> iterable of Sample, tensors made on ``device`` with ``dtype``
    samples: Callable[[str, Any], Iterable[Sample]]
    #: ref(*args, **kwargs) with tensors converted to NumPy arrays -> array or tuple of arrays;
    #: None when the op is checked by hand-written tests only (say where in ``note``)
    ref: Optional[Callable] = None
    #: dtype names the forward test runs over
    dtypes: tuple = ("float32", "float64")
    #: gradcheck (float64) over the floating tensor inputs of every sample
    grad: bool = True
    #: gradgradcheck too (set False only with a reason in ``note``)
    gradgrad: bool = True
    #: errors(device) -> iterable of ErrorCase
    errors: Optional[Callable[[str], Iterable[ErrorCase]]] = None
    #: other public names this entry covers ("Tensor.reshape", "reshape_", ...)
    aliases: tuple = ()
    atol: float = 1e-5
    rtol: float = 1.3e-6
    #: tolerances for float16/bfloat16/float32 when looser than the defaults
    low_precision_tol: Optional[tuple] = None
    note: str = ""


_entries: Optional[list] = None


def all_entries() -> list:
    """Every registered entry, importing the family modules on first call."""
    global _entries
    if _entries is None:
        entries = []
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            entries.extend(getattr(mod, "ENTRIES", []))
        names = [e.name for e in entries]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise RuntimeError(f"op registry: duplicate entries {sorted(dup)}")
        _entries = entries
    return _entries


def registered_names() -> set:
    """Every public name covered by an entry (names and aliases) or by the
    elementwise op table."""
    from .. import opinfo
    names = set()
    for e in all_entries():
        names.add(e.name)
        names.update(e.aliases)
    for o in opinfo.op_db:
        names.update({o.name, f"Tensor.{o.name}", f"Tensor.{o.name}_"})
    return names
