"""Scriptable stand-ins for library methods whose own source the script compiler cannot
compile (Note [Script compiler]); each is the same computation in the supported subset.
Empty while every library module used in scripts compiles from its own source."""
from __future__ import annotations

_OVERRIDES = {}


def override_for(module, name):
    """The function to compile instead of type(module).<name>, or None."""
    for cls in type(module).__mro__:
        fn = _OVERRIDES.get((cls, name))
        if fn is not None:
            return fn
    return None


def register(cls, name="forward"):
    def deco(fn):
        _OVERRIDES[(cls, name)] = fn
        return fn
    return deco
