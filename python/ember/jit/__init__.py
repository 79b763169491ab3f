"""ember.jit: trace and script models to graphs, save them as one safe archive, and run
them from Python or from C++ without Python (torch.jit's API).

- ``trace(fn_or_module, example_inputs)`` records the ops a run executes (with guards
  where the run depended on a value: Note [Traced sizes] in ``_trace.py``);
- ``script(fn_or_module)`` compiles the Python source, control flow included
  (Note [Script compiler] in ``_script.py``);
- ``save``/``load`` write and read archives that ``ember::jit::load`` reads in C++;
- ``freeze``/``optimize_for_inference`` fold parameters into the graph.

The graphs, passes, interpreter and archive are C++ (``csrc/ember/jit/``).
"""
from __future__ import annotations

import contextlib
import functools

from .. import _C
from ._module import (
    RecursiveScriptModule,
    ScriptFunction,
    ScriptModule,
    TopLevelTracedModule,
    TracedModule,
    script_method,
)
from ._script import ScriptError
from ._serialization import load, save
from ._trace import TracerWarning, TracingCheckError, _untraced, is_tracing, trace, trace_module  # noqa: F401

__all__ = ["trace", "trace_module", "script", "script_method", "ignore", "unused", "export",
           "is_scripting", "is_tracing", "save", "load", "freeze", "optimize_for_inference",
           "fuser", "annotate", "TracerWarning", "TracingCheckError", "ScriptModule",
           "ScriptFunction", "RecursiveScriptModule", "TopLevelTracedModule", "TracedModule",
           "ScriptError", "Final", "Attribute", "interface", "unused", "set_fusion_strategy",
           "enable_onednn_fusion", "onednn_fusion_enabled", "isinstance"]

Final = object  # annotations only


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compiles a function or a module's forward from its Python source (torch.jit.script).
    Supported: if/elif/else, for over range/lists/ModuleLists, while, tuples, lists,
    Optional, int/float/bool/str/Tensor/List/Tuple annotations, ember functions, F.*,
    Tensor methods, submodules and self attributes, assert/raise. Anything else raises
    ScriptError with file:line."""
    from ..nn.modules.module import Module
    from . import _script
    if isinstance(obj, (ScriptModule, ScriptFunction)) and getattr(obj, "_c", 1) is not None:
        return obj
    if isinstance(obj, Module):
        return _script.script_module(obj)
    if isinstance(obj, type):
        raise _script.ScriptError("ember.jit.script: scripting a class is not supported; "
                                  "script an instance of it")
    if callable(obj):
        return _script.script_function(obj)
    raise TypeError(f"ember.jit.script: cannot script a {type(obj).__name__}")


def ignore(drop=False, **kwargs):
    """Leaves a function to Python (torch.jit.ignore): the script compiler does not compile
    it. Called with constant arguments while compiling, it runs then; called with graph
    values, compiling raises (a graph must also run from C++, without Python).
    ``ignore(drop=True)`` is ``unused``."""
    def mark(fn):
        fn._ember_jit_ignore = True
        if drop:
            fn._ember_jit_unused = True
        return fn
    if callable(drop):
        return mark(drop) if not isinstance(drop, bool) else mark
    return mark


def unused(fn):
    """The compiled graph raises instead of calling ``fn`` (torch.jit.unused)."""
    if isinstance(fn, property):
        return fn
    fn._ember_jit_unused = True
    return fn


def export(fn):
    """Compiles a method besides forward when its module is scripted (torch.jit.export)."""
    fn._ember_jit_export = True
    return fn


def interface(cls):
    return cls


def is_scripting():
    """False in Python; a compiled graph sees True (torch.jit.is_scripting)."""
    return False


def annotate(the_type, the_value):
    """Gives a value a type in scripts (torch.jit.annotate); returns the value in Python."""
    return the_value


def isinstance(obj, target_type):  # noqa: A001 - torch.jit.isinstance
    import builtins
    return builtins.isinstance(obj, target_type)


class Attribute:
    def __init__(self, value, type=None):  # noqa: A002
        self.value = value
        self.type = type


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A copy of a ScriptModule in eval mode whose parameters and buffers are constants of
    its graph, folded where possible (torch.jit.freeze). Gradients do not flow into it."""
    if not isinstance(mod, ScriptModule) or getattr(mod, "_c", None) is None:
        raise RuntimeError("ember.jit.freeze expects a ScriptModule (from ember.jit.script or "
                           "ember.jit.trace)")
    if mod.training:
        raise RuntimeError("ember.jit.freeze is only supported on modules in eval mode; call "
                           ".eval() first")
    mod._sync_to_c()
    g = mod._c.inlined_graph("forward")
    _C._jit_pass_freeze(g, mod._c)
    _C._jit_pass_optimize(g)
    return _FrozenModule(mod, g)


def optimize_for_inference(mod, other_methods=None):
    """freeze + inference-only rewrites (torch.jit.optimize_for_inference)."""
    if not isinstance(mod, ScriptModule):
        mod = script(mod)
    if mod.training:
        mod = mod.eval()
    frozen = mod if isinstance(mod, _FrozenModule) else freeze(mod)
    return frozen


class _FrozenModule(RecursiveScriptModule):
    """The result of freeze(): forward is a self-contained graph (parameters inlined)."""

    def __init__(self, mod, graph):
        cls = _C._jit_ClassType(mod._c.type_name + ".frozen")
        cls.add_attr("training", "bool", False, False)
        cls.add_method("forward", graph)
        obj = _C._jit_Object(cls)
        obj.set_attr("training", False)
        obj.training = False
        obj.original_name = mod._c.original_name
        RecursiveScriptModule.__init__(self, obj, forward_fn=getattr(mod, "_forward_fn", None))

    def train(self, mode=True):
        if mode:
            raise RuntimeError("a frozen module cannot go back to training mode")
        return self


@contextlib.contextmanager
def fuser(name):
    """Chooses the fusion backend (torch.jit.fuser). ember's interpreter runs graphs
    unfused until ember.compile's fusion pass is registered; the names are accepted."""
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise Exception(f"unrecognized fuser option (name: {name})")
    yield


def set_fusion_strategy(strategy):
    return []


def enable_onednn_fusion(enabled):
    pass


def onednn_fusion_enabled():
    return False


def _guard(value, expected):
    """Shown in ``.code`` where a trace recorded a guard (never called)."""
    raise RuntimeError("ember.jit._guard is a marker in printed code")


_ = functools
