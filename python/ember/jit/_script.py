"""ember.jit.script: compile Python source to a graph.

Note [Script compiler]
The compiler walks the function's AST and emits graph nodes. Every expression gives
either a *constant* (a Python value known while compiling: module attributes such as
``self.stride``, literals, dtypes, modules and functions themselves) or a *value* of
the graph (tensors, and numbers, bools, lists computed at run time). Python code whose
inputs are all constants is simply executed while compiling (``_ntuple(stride, 2)``,
``isinstance(padding, str)``, ``math.sqrt(64)``), and a branch whose condition is a
constant is compiled alone, so ember's own library (``nn.Conv2d.forward``,
``F.batch_norm``...) compiles from its ordinary source, as PyTorch's does. Calls to
ember's C++ functions and Tensor methods resolve by name against the operator registry
(schemas: arguments, kwargs, defaults, overloads by type); submodule calls become
``prim::CallMethod`` of the submodule's own compiled ``forward``; other Python
functions are compiled inline. ``if``/``while``/``for`` over ``range`` or a list become
``prim::If``/``prim::Loop`` with the variables they assign as block outputs; ``for``
over a ``ModuleList``, ``Sequential`` or a constant tuple is unrolled. Anything else
raises ``ScriptError`` with file:line and the hint to use ``@ember.jit.ignore`` or
trace. Statements are in ``_script_stmt.py``, expressions in ``_script_expr.py``.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from .. import _C

__all__ = ["ScriptError", "script_function", "script_module", "compile_script_methods"]


class ScriptError(RuntimeError):
    """Code the script compiler does not support (torch.jit.frontend.NotSupportedError)."""


HINT = ("; mark the function with @ember.jit.ignore to keep it in Python, or trace it "
        "(ember.jit.trace)")


class Const:
    """A value known while compiling."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Const({self.value!r})"


class Val:
    """A value of the graph and its type."""
    __slots__ = ("v", "type")

    def __init__(self, v, typ):
        self.v = v
        self.type = typ

    def __repr__(self):
        return f"Val(%{self.v.name}: {self.type})"


class ModuleRef:
    """A submodule known while compiling, with how to reach it from ``self``."""
    __slots__ = ("module", "path")

    def __init__(self, module, path):
        self.module = module
        self.path = path


class Undefined:
    """A name assigned on one path only."""


class Source:
    """A parsed function: its AST, file and first line, globals and closure."""

    def __init__(self, fn):
        fn = inspect.unwrap(fn)
        self.fn = fn
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise ScriptError(f"ember.jit.script: cannot read the source of "
                              f"{getattr(fn, '__qualname__', fn)!r} ({e}){HINT}") from None
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.first = first
        text = textwrap.dedent("".join(lines))
        tree = ast.parse(text)
        self.node = tree.body[0]
        if not isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise ScriptError(f"ember.jit.script: {fn!r} is not a function{HINT}")
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def where(self, node):
        line = self.first + getattr(node, "lineno", 1) - 1
        return f"{self.file}:{line}"


def _memo_paths(module):
    return {id(m): name for name, m in module.named_modules(remove_duplicate=False)}


class Compiler:
    """State shared by the functions one script() call compiles."""

    def __init__(self, root=None, memo=None):
        self.root = root
        self.memo = memo if memo is not None else {}
        self.compiling = set()

    def object_of(self, module):
        from ._module import build_object
        return build_object(module, self.memo)

    def compile_method(self, module, name="forward", fn=None):
        """Compiles module.<name> into a method of its C++ class (once)."""
        obj = self.object_of(module)
        if obj.type.has_method(name):
            return obj
        key = (id(module), name)
        if key in self.compiling:
            raise ScriptError(f"ember.jit.script: {type(module).__name__}.{name} calls itself "
                              f"recursively{HINT}")
        self.compiling.add(key)
        try:
            if fn is None:
                fn = _method_source(module, name)
            from ._script_stmt import FunctionBuilder
            b = FunctionBuilder(self, Source(fn), self_module=module, self_type=obj.type_name)
            graph = b.build()
            obj.type.add_method(name, graph)
        finally:
            self.compiling.discard(key)
        return obj


def _method_source(module, name):
    from ._overrides import override_for
    fn = override_for(module, name)
    if fn is not None:
        return fn
    fn = getattr(type(module), name, None)
    if fn is None:
        raise ScriptError(f"ember.jit.script: {type(module).__name__} has no method {name}")
    if getattr(fn, "_ember_jit_ignore", False):
        raise ScriptError(f"ember.jit.script: {type(module).__name__}.{name} is marked "
                          "@ember.jit.ignore and cannot be compiled")
    from ._module import _ScriptMethodStub
    if isinstance(fn, _ScriptMethodStub):
        fn = fn.original
    return fn


def script_function(fn):
    """Compiles a free function into a ScriptFunction."""
    from ._module import ScriptFunction
    from ._script_stmt import FunctionBuilder
    c = Compiler()
    b = FunctionBuilder(c, Source(fn))
    graph = b.build()
    f = _C._jit_Function(fn.__name__, graph)
    return ScriptFunction(f, original=fn, name=fn.__name__)


def script_module(module):
    """Compiles module.forward (and whatever it calls) into a RecursiveScriptModule that
    shares the module's parameters and buffers."""
    from ._module import RecursiveScriptModule
    c = Compiler(root=module)
    obj = c.compile_method(module, "forward")
    fwd = getattr(type(module), "forward", None)
    from ._module import _ScriptMethodStub
    if isinstance(fwd, _ScriptMethodStub):
        fwd = fwd.original
    return RecursiveScriptModule(obj, forward_fn=fwd)


def compile_script_methods(instance):
    """Compiles the @script_method methods of a ScriptModule subclass instance (at the end
    of its __init__); the instance then runs them as graphs."""
    c = Compiler(root=instance)
    obj = c.object_of(instance)
    for name, stub in type(instance)._script_method_stubs.items():
        c.compile_method(instance, name, stub.original)
    object.__setattr__(instance, "_c", obj)
    object.__setattr__(instance, "_c_memo", c.memo)
