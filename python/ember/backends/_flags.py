"""Modules whose attributes are process-wide C++ switches (core/flags.h).

``ember.backends.cudnn.benchmark = True`` must reach the kernels, so these modules are
instances of a ModuleType subclass with properties, as torch.backends' are.
"""
import contextlib
import types

from .. import _C


def flag_property(name, doc):
    """A property reading and writing the C++ flag `name`; setting takes a bool."""

    def get(self):
        return _C._get_backend_flag(name)

    def set_(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"{doc.split(':')[0]} expects a bool, got {type(value).__name__}")
        _C._set_backend_flag(name, value)

    return property(get, set_, doc=doc)


class FlagModule(types.ModuleType):
    """A module whose class carries the flag properties; plain attributes stay module
    attributes."""


def install(module_name, module_globals, cls):
    """Replaces the module `module_name` in sys.modules by an instance of `cls` carrying
    its globals, so that assignments to the flag attributes go through the properties."""
    import sys

    new = cls(module_name, module_globals.get("__doc__"))
    for key, value in module_globals.items():
        if key not in cls.__dict__:
            setattr(new, key, value)
    sys.modules[module_name] = new
    parent, _, child = module_name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, new)
    return new


@contextlib.contextmanager
def saved_flags(names, values):
    """Sets the C++ flags `names` to `values` (None: unchanged) and restores them."""
    old = [_C._get_backend_flag(n) for n in names]
    try:
        for n, v in zip(names, values):
            if v is not None:
                _C._set_backend_flag(n, bool(v))
        yield
    finally:
        for n, v in zip(names, old):
            _C._set_backend_flag(n, v)
