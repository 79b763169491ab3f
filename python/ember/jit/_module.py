"""ScriptModule, ScriptFunction and the C++ module objects behind them.

Note [Script module objects]
A traced, scripted or loaded module is a C++ object (``_C._jit_Object``): a class with
named attribute slots (parameters, buffers, submodules, plain values such as
``training``) and methods (graphs). The Python side is a wrapper, an ``nn.Module``
subclass whose ``_parameters``, ``_buffers`` and ``_modules`` hold the *same* tensors
as the C++ slots (and wrappers of the C++ submodules), so ``state_dict``,
``parameters``, optimizers, hooks and ``load_state_dict`` work unchanged, and updates
made in place (an optimizer step, ``load_state_dict``) are seen by both. Operations
that replace a tensor or flip a flag (``to``/``cuda``/``float``, ``train``/``eval``,
assigning a parameter) push the change into the C++ slots and drop the compiled code,
which is rebuilt on the next call. ``forward`` runs the method's graph in the
interpreter with the GIL released.
"""
from __future__ import annotations

import inspect

from .. import _C
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from . import _code

__all__ = ["ScriptModule", "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule",
           "ScriptFunction", "script_method", "build_object", "class_name"]


def class_name(cls):
    """The qualified class name a C++ object gets: ``__ember__.<module>.<Class>``."""
    return f"__ember__.{cls.__module__}.{cls.__qualname__}".replace("<locals>.", "")


def _is_tensor(v):
    return isinstance(v, _C.Tensor)


def build_object(module, memo=None, attrs=True):
    """The C++ object tree of a Python module: one object per module (a module reached
    twice is one object), its parameters, buffers and submodules as slots, plus its
    ``training`` flag. Methods are added by the tracer or the script compiler."""
    if memo is None:
        memo = {}
    if id(module) in memo:
        return memo[id(module)]
    if isinstance(module, ScriptModule) and getattr(module, "_c", None) is not None:
        memo[id(module)] = module._c
        return module._c
    cls = _C._jit_ClassType(class_name(type(module)))
    obj = None
    names = []
    for name, p in module._parameters.items():
        cls.add_attr(name, "Tensor" if p is not None else "Tensor?", True, False)
        names.append((name, p))
    for name, b in module._buffers.items():
        cls.add_attr(name, "Tensor" if b is not None else "Tensor?", False, False)
        names.append((name, b))
    cls.add_attr("training", "bool", False, False)
    names.append(("training", bool(module.training)))
    obj = _C._jit_Object(cls)
    memo[id(module)] = obj
    for name, sub in module._modules.items():
        if sub is None:
            cls.add_attr(name, "NoneType", False, False)
            names.append((name, None))
            continue
        subobj = build_object(sub, memo, attrs)
        cls.add_attr(name, subobj.type_name, False, True)
        names.append((name, subobj))
    obj.grow()
    for name, v in names:
        obj.set_attr(name, v)
    obj.training = bool(module.training)
    obj.original_name = type(module).__name__
    return obj


class _ScriptMethodStub:
    """What ``@script_method`` leaves in a ScriptModule subclass until the instance is
    compiled (at the end of its ``__init__``)."""

    def __init__(self, fn):
        self.original = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        name = self.__name__

        def call(*args, **kwargs):
            c = obj.__dict__.get("_c")
            if c is None:
                # Called before compilation (inside __init__): run the Python function.
                return self.original(obj, *args, **kwargs)
            return c.run_method(name, _bind_args(self.original, args, kwargs))

        call.__name__ = name
        return call


def script_method(fn):
    """Marks a method of a ScriptModule subclass to be compiled (torch.jit.script_method)."""
    return _ScriptMethodStub(fn)


def _bind_args(fn, args, kwargs):
    """Positional arguments (self excluded) for a graph, from args and kwargs bound to fn's
    signature with its defaults filled in."""
    if fn is None:
        if kwargs:
            raise TypeError("this traced module's forward takes positional arguments only")
        return tuple(args)
    sig = inspect.signature(fn)
    bound = sig.bind(None, *args, **kwargs)
    bound.apply_defaults()
    out = list(bound.args[1:])
    for _name, v in bound.kwargs.items():  # keyword-only parameters
        out.append(v)
    return tuple(out)


class _ScriptMeta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        stubs = {}
        for base in reversed(cls.__mro__):
            for k, v in vars(base).items():
                if isinstance(v, _ScriptMethodStub):
                    stubs[k] = v
        cls._script_method_stubs = stubs

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        if cls._script_method_stubs and obj.__dict__.get("_c") is None and \
                not getattr(obj, "_wrapper", False):
            from . import _script
            _script.compile_script_methods(obj)
        return obj


class ScriptModule(Module, metaclass=_ScriptMeta):
    """A module whose methods run as graphs (torch.jit.ScriptModule).

    Subclass it and mark methods with ``@ember.jit.script_method`` to compile them when
    the instance is built; ``ember.jit.trace``/``script``/``load`` return instances of its
    subclasses.
    """

    def __init__(self):
        super().__init__()

    # ---- graph views ----
    @property
    def graph(self):
        """The forward method's graph (TorchScript's ``module.graph``)."""
        return self._c.method_graph("forward")

    @property
    def inlined_graph(self):
        """The forward graph with every submodule call inlined."""
        return self._c.inlined_graph("forward")

    @property
    def code(self):
        """The forward method as Python-like source (TorchScript's ``module.code``)."""
        return _code.method_code(self._c, "forward")

    def graph_for(self, *args, **kwargs):
        """The graph the interpreter runs for these inputs: inlined and optimized."""
        return self._c.optimized_graph("forward")

    def save(self, f, _extra_files=None):
        """Writes the module as an ember.jit archive (ember.jit.save)."""
        from ._serialization import save
        save(self, f, _extra_files)

    def _run(self, name, args):
        return self._c.run_method(name, args)

    # ---- keeping the C++ object in step (Note [Script module objects]) ----
    def _sync_to_c(self, seen=None):
        c = self.__dict__.get("_c")
        if c is None:
            return
        seen = set() if seen is None else seen
        if id(self) in seen:
            return
        seen.add(id(self))
        for name, p in self._parameters.items():
            if c.has_attr(name):
                c.set_attr(name, p)
        for name, b in self._buffers.items():
            if c.has_attr(name):
                c.set_attr(name, b)
        if c.has_attr("training"):
            c.set_attr("training", bool(self.training))
        c.training = bool(self.training)
        for sub in self._modules.values():
            if isinstance(sub, ScriptModule):
                sub._sync_to_c(seen)
            elif sub is not None:
                _sync_plain(sub, self._c_objects(), seen)

    def _c_objects(self):
        return self.__dict__.get("_c_memo", {})

    def _after_change(self):
        self._sync_to_c()
        c = self.__dict__.get("_c")
        if c is not None:
            c.reset_code()

    def train(self, mode=True):
        super().train(mode)
        self._after_change()
        return self

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self._after_change()
        return self

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        c = self.__dict__.get("_c")
        if c is not None and name not in ("training",) and c.has_attr(name) and \
                (value is None or _is_tensor(value) or isinstance(value, (bool, int, float))):
            c.set_attr(name, value)
            c.reset_code()


def _sync_plain(module, memo, seen):
    """Pushes a plain Python submodule's tensors into its C++ object (a ScriptModule
    subclass compiled from Python modules keeps those modules as its children)."""
    if id(module) in seen:
        return
    seen.add(id(module))
    c = memo.get(id(module))
    if c is None:
        return
    for name, p in module._parameters.items():
        if c.has_attr(name):
            c.set_attr(name, p)
    for name, b in module._buffers.items():
        if c.has_attr(name):
            c.set_attr(name, b)
    if c.has_attr("training"):
        c.set_attr("training", bool(module.training))
    c.training = bool(module.training)
    for sub in module._modules.values():
        if sub is not None:
            _sync_plain(sub, memo, seen)


class RecursiveScriptModule(ScriptModule):
    """The Python face of a C++ module object (what ``script``, ``trace`` and ``load``
    return); submodules are wrapped the same way."""

    _wrapper = True

    def __init__(self, c, forward_fn=None, memo=None):
        Module.__init__(self)
        object.__setattr__(self, "_c", c)
        object.__setattr__(self, "_forward_fn", forward_fn)
        object.__setattr__(self, "_original_name", c.original_name or "Module")
        memo = {} if memo is None else memo
        memo[id(c)] = self
        kinds = dict(zip(c.type.attr_names(), c.type.attr_kinds()))
        for name, kind in kinds.items():
            value = c.get_attr(name)
            if kind == "module":
                if value is None:
                    self._modules[name] = None
                    continue
                sub = _wrap(value, memo, type(self) if type(self) is not TopLevelTracedModule
                            else TracedModule)
                self._modules[name] = sub
            elif kind == "parameter":
                if value is not None and not isinstance(value, Parameter):
                    value = Parameter(value, requires_grad=value.requires_grad)
                    c.set_attr(name, value)  # one tensor for Python and C++
                self._parameters[name] = value
            elif name == "training":
                self.__dict__["training"] = bool(value)
            elif _is_tensor(value) or (value is None and c.type.attr_type(name) == "Tensor?"):
                self._buffers[name] = value
            else:
                self.__dict__[name] = value

    def _get_name(self):
        return self._original_name

    def extra_repr(self):
        return f"original_name={self._original_name}"

    def forward(self, *args, **kwargs):
        return self._c.run_method("forward", _bind_args(self._forward_fn, args, kwargs))

    # ---- containers (ModuleList, Sequential, ModuleDict): indexing, len, iteration ----
    _CONTAINERS = ("ModuleList", "Sequential", "ModuleDict")

    def _container(self, what):
        if self._original_name not in self._CONTAINERS:
            raise TypeError(f"'{type(self).__name__}' object ({self._original_name}) does not "
                            f"support {what}: only scripted or traced ModuleList, Sequential and "
                            "ModuleDict do")
        return self._modules

    def __getitem__(self, idx):
        mods = self._container("indexing")
        if isinstance(idx, str):
            return mods[idx]
        items = list(mods.values())
        if isinstance(idx, slice):
            return items[idx]
        try:
            return items[idx.__index__()]
        except IndexError:
            raise IndexError(f"index {idx} is out of range") from None

    def __len__(self):
        return len(self._container("len()"))

    def __iter__(self):
        mods = self._container("iteration")
        return iter(mods if self._original_name == "ModuleDict" else mods.values())

    def __contains__(self, key):
        return key in self._container("'in'")

    def __bool__(self):
        return True

    def __getattr__(self, name):
        # Methods of the C++ class other than forward.
        c = self.__dict__.get("_c")
        if c is not None and name != "forward" and c.type.has_method(name):
            return lambda *args: c.run_method(name, tuple(args))
        return super().__getattr__(name)


class TracedModule(RecursiveScriptModule):
    """A submodule of a traced module (torch.jit._trace.TracedModule)."""


class TopLevelTracedModule(TracedModule):
    """What ``ember.jit.trace`` returns for a module (torch.jit._trace.TopLevelTracedModule)."""


def _wrap(c, memo, kind):
    for _k, v in memo.items():
        if isinstance(v, RecursiveScriptModule) and v._c.same(c):
            return v
    return kind(c, memo=memo)


class ScriptFunction:
    """A traced or scripted function (torch.jit.ScriptFunction): call it like the
    original; ``.graph``, ``.code``, ``.save``."""

    def __init__(self, fn, original=None, name=None):
        self._fn = fn
        self._original = original
        self.__name__ = name or fn.name
        self.__qualname__ = self.__name__
        if original is not None:
            self.__doc__ = original.__doc__

    def __call__(self, *args, **kwargs):
        if kwargs or (self._original is not None and len(args) != self._num_inputs()):
            args = _bind_args_function(self._original, args, kwargs)  # defaults filled in
        return self._fn(*args)

    def _num_inputs(self):
        n = self.__dict__.get("_n_inputs")
        if n is None:
            n = self._n_inputs = len(self._fn.graph.inputs())
        return n

    @property
    def graph(self):
        return self._fn.graph

    @property
    def inlined_graph(self):
        return self._fn.graph

    @property
    def code(self):
        return _code.function_code(self._fn.graph, self.__name__)

    def graph_for(self, *args, **kwargs):
        return self._fn.optimized_graph()

    def save(self, f, _extra_files=None):
        from ._serialization import save
        save(self, f, _extra_files)

    @property
    def schema(self):
        ins = ", ".join(f"{v.type} {v.name}" for v in self.graph.inputs())
        outs = ", ".join(v.type for v in self.graph.outputs())
        return f"{self.__name__}({ins}) -> {outs}"

    def __repr__(self):
        return f"<ember.jit.ScriptFunction object at {hex(id(self))}>"


def _bind_args_function(fn, args, kwargs):
    if fn is None:
        raise TypeError("this function takes positional arguments only")
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())
