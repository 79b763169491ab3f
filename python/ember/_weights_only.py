"""Weights-only unpickling: the allowlist ``ember.load`` applies to pickled data.

Note [Weights-only unpickling]
Unpickling calls whatever callables the pickle names, so loading an untrusted pickle runs
its code. With ``weights_only`` (the default of ``ember.load``) pickled data is read by
``RestrictedUnpickler``: every global the pickle names (GLOBAL / STACK_GLOBAL, which is
the only way a pickle reaches a callable or class) must be in an allowlist: the tensor
rebuild functions (ember's own, or the ember stand-ins for PyTorch's), the containers and
values PyTorch's weights-only unpickler accepts (OrderedDict, Counter, set, frozenset,
complex, bytearray, bytes through ``_codecs.encode``, Size, device, dtypes) and what the
user added with ``add_safe_globals`` / ``safe_globals``. Anything else raises
``pickle.UnpicklingError`` naming the global and how to allow it; a truncated or corrupt
pickle raises RuntimeError saying so (never "re-run with weights_only=False").
"""
from __future__ import annotations

import collections
import contextlib
import io
import pickle
import pickletools

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "RestrictedUnpickler", "WeightsOnlyError"]

# Modules no allowlist entry may name, even one the user adds.
_BLOCKED_MODULES = ("sys", "os", "posix", "nt", "subprocess")

_user_safe_globals: list = []


def add_safe_globals(safe_globals):
    """Marks globals (classes, functions) as safe for weights-only loading. Each entry is
    the object itself, or ``(object, "module.qualname")`` when the name in the file differs
    from where the object lives now."""
    for g in safe_globals:
        _check_entry(g)
        if g not in _user_safe_globals:
            _user_safe_globals.append(g)


def clear_safe_globals():
    """Forgets every global added with ``add_safe_globals``."""
    _user_safe_globals.clear()


def get_safe_globals():
    """The globals added with ``add_safe_globals``, as a list."""
    return list(_user_safe_globals)


@contextlib.contextmanager
def safe_globals(safe_globals):
    """``with safe_globals([Foo]):`` allows ``Foo`` for weights-only loading inside the
    block only."""
    added = [g for g in safe_globals if g not in _user_safe_globals]
    add_safe_globals(added)
    try:
        yield
    finally:
        for g in added:
            if g in _user_safe_globals:
                _user_safe_globals.remove(g)


def _check_entry(g):
    if isinstance(g, tuple):
        if len(g) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got "
                             f"tuple of length: {len(g)}")
        if type(g[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                            f"{type(g[1])}")
    elif not callable(g):
        raise TypeError(f"add_safe_globals: expected a class or function (or a (global, name) "
                        f"tuple), got {type(g).__name__}")


def _full_name(g):
    return f"{g.__module__}.{g.__qualname__}"


def user_allowed():
    """{"module.qualname": object} of the user's safe globals."""
    out = {}
    for g in _user_safe_globals:
        if isinstance(g, tuple):
            out[g[1]] = g[0]
        else:
            out[_full_name(g)] = g
    return out


def _encode(s, encoding="latin1"):  # what pickle's protocol 2 calls to rebuild bytes
    import codecs  # noqa: PLC0415
    if not isinstance(s, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only to rebuild bytes from latin1 text")
    return codecs.encode(s, encoding)


def base_allowed():
    """The globals every weights-only load accepts (PyTorch's defaults)."""
    return {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.complex": complex,
        "builtins.bytearray": bytearray,
        "builtins.slice": slice,
        "_codecs.encode": _encode,
    }


class WeightsOnlyError(pickle.UnpicklingError):
    """A global the weights-only allowlist does not hold."""


def _unsupported(full):
    short = full.rpartition(".")[2]
    return WeightsOnlyError(
        "Weights only load failed. This file can still be loaded: do it only if you trust its "
        "source. (1) Re-run ember.load with weights_only=False: it will likely succeed, but "
        "unpickling can then run arbitrary code from the file. (2) Or allowlist what the file "
        f"needs and keep weights_only=True. Unsupported global: GLOBAL {full} was not an allowed "
        f"global by default. Please use `ember.serialization.add_safe_globals([{short}])` or the "
        f"`ember.serialization.safe_globals([{short}])` context manager to allowlist this global "
        "if you trust this class/function.")


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler whose globals come only from ``allowed`` (name -> object) and the
    user's safe globals; ``unrestricted`` lets other names through (weights_only=False)."""

    def __init__(self, file, allowed, *, unrestricted=False, persistent_load=None, **kwargs):
        super().__init__(file, **kwargs)
        self._allowed = allowed
        self._unrestricted = unrestricted
        if persistent_load is not None:
            self.persistent_load = persistent_load

    def find_class(self, module, name):
        # Pickle protocols 0-2 name Python 3's builtins module as Python 2's __builtin__
        # (Unpickler.find_class maps it back; this override sees the raw name).
        if module == "__builtin__":
            module = "builtins"
        full = f"{module}.{name}"
        if full in self._allowed:
            return self._allowed[full]
        user = user_allowed()
        if full in user:
            if module.split(".")[0] in _BLOCKED_MODULES:
                raise WeightsOnlyError(f"Trying to load unsupported GLOBAL {full} whose module "
                                       f"{module} is blocked.")
            return user[full]
        if self._unrestricted:
            return super().find_class(module, name)
        raise _unsupported(full)


def load(file, allowed, *, unrestricted=False, **kwargs):
    """Unpickles with RestrictedUnpickler. A truncated or malformed pickle is RuntimeError
    (weights-only: any error of the unpickling machinery; unrestricted, errors raised by the
    objects being rebuilt propagate as they are)."""
    structural = (EOFError, pickle.UnpicklingError)
    if not unrestricted:
        structural += (ValueError, IndexError, KeyError, TypeError, UnicodeDecodeError,
                       AttributeError, OverflowError, MemoryError, RecursionError)
    try:
        return RestrictedUnpickler(file, allowed, unrestricted=unrestricted, **kwargs).load()
    except WeightsOnlyError:
        raise
    except RuntimeError:
        raise
    except structural as e:
        raise RuntimeError(f"ember.load: invalid file: the pickled data is truncated or corrupt "
                           f"({type(e).__name__}: {e})") from e


def globals_in_pickle(data):
    """The "module.name" of every global a pickle (bytes) names, without running it."""
    names, strings = [], []
    for op, arg, _ in pickletools.genops(io.BytesIO(data)):
        if op.name == "GLOBAL":
            names.append(arg.replace(" ", "."))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            names.append(f"{strings[-2]}.{strings[-1]}")
    return names
