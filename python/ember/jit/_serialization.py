"""ember.jit.save / ember.jit.load: one safe archive per module or function (Note
[Archive format] in csrc/ember/jit/archive.h)."""
from __future__ import annotations

import io
import os

from .. import _C
from . import _module

__all__ = ["save", "load"]


def _path(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return None


def save(m, f, _extra_files=None):
    """Saves a ScriptModule (traced or scripted) or ScriptFunction to ``f`` (a path or a
    writable binary file) as an ember.jit archive: tensors in ember's safe format, the
    graphs and module tree as metadata, no code and no pickle."""
    extra = {k: (v.decode() if isinstance(v, bytes) else str(v))
             for k, v in (_extra_files or {}).items()}
    if isinstance(m, _module.ScriptFunction):
        target = m._fn
    elif isinstance(m, _module.ScriptModule) and getattr(m, "_c", None) is not None:
        m._sync_to_c()
        target = m._c
    else:
        raise TypeError(f"ember.jit.save: expected a ScriptModule or ScriptFunction (from "
                        f"ember.jit.trace or ember.jit.script), got {type(m).__name__}; save a "
                        "plain module's weights with ember.save(model.state_dict(), path)")
    path = _path(f)
    if path is not None:
        target.save(path, extra)
        return
    if isinstance(target, _C._jit_Function):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "fn.pt")
            target.save(p, extra)
            with open(p, "rb") as fh:
                f.write(fh.read())
        return
    f.write(target.save_to_bytes(extra))


def load(f, map_location=None, _extra_files=None):
    """Loads an archive written by ember.jit.save: a ScriptModule (whose forward runs in
    the interpreter, parameters shared with Python) or a ScriptFunction. The file is
    validated (checksum, every op known, graphs well formed) before anything is built.
    ``map_location`` moves the tensors (and the graphs' device constants) to a device."""
    device = None
    if map_location is not None:
        if callable(map_location) or isinstance(map_location, dict):
            raise TypeError("ember.jit.load: map_location must be a device or a string")
        device = _C.device(map_location) if isinstance(map_location, str) else map_location
    path = _path(f)
    if path is not None:
        if not os.path.exists(path):
            raise ValueError(f"The provided filename {path} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"The provided filename {path} is a directory")
        what, extra = _C._jit_load(path, device)
    else:
        data = f.read() if hasattr(f, "read") else bytes(f)
        what, extra = _C._jit_load_bytes(data, device)
    if _extra_files is not None:
        for k in list(_extra_files):
            if k in extra:
                _extra_files[k] = extra[k]
    if isinstance(what, _C._jit_Function):
        return _module.ScriptFunction(what)
    return _module.RecursiveScriptModule(what)


_ = io
