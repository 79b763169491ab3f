"""ember.compile: trace a function or module per input signature, fuse its elementwise
chains into generated C++ kernels, and replay (Note [ember.compile]).

Note [ember.compile]
``compile(fn)`` returns a callable that, per call, computes the signature of its inputs
(Note [Compile signatures]) and looks it up among the entries compiled so far. A new
signature is traced with ember.jit's tracer (the function over the flattened tensors of
its arguments; other arguments, module parameters and buffers are constants of the
graph, held by reference, so optimizer updates and gradients reach the real
parameters), optimized by ember.jit's passes, fused (``_fusion.py``), and every group
compiled to a kernel (``_codegen.py``, ``_toolchain.py``) that the graph calls through
an ``ember::fusion_group`` node; the graph then runs in ember.jit's C++ interpreter.
A trace guard that fails at run time (a branch on a value, a size baked into a
constant) retraces for the new inputs, like a signature change, with a warning that
names the guard. At most ``cache_size_limit`` (8) entries per function; past that, and
for code the tracer cannot record (an unsupported op, ``.item()`` feeding control flow
where the trace's guard fires every call), the call runs eagerly with a warning.
``fullgraph=True`` raises instead of falling back.

Note [Compile signatures]
The signature of a call: the structure of its arguments (positional and keyword, nested
tuples/lists/dicts); per tensor its dtype, device, requires_grad and sizes (with
``dynamic=True``, only its rank and which sizes are 0 or 1, as PyTorch specializes them);
per other value its type and value; grad mode; autocast state; for a module its
``training`` flag and the identity of its parameters. ``dynamic=None`` (the default)
compiles static shapes first and, when a later call differs only in sizes, compiles a
dynamic entry (PyTorch's automatic dynamic shapes).
"""
from __future__ import annotations

import functools
import inspect
import warnings

from .. import _C
from . import _log

__all__ = ["compile", "OptimizedModule", "reset", "config"]


class _Config:
    cache_size_limit = 8
    suppress_errors = False
    # Row groups (softmax, layer_norm & co. with their chains) where a gradient flows:
    # correct (gradcheck) but their backward kernels are still slower than eager's (softmax:
    # its exp does not vectorize yet; layer_norm: it recomputes the row statistics and
    # writes each input's gradient, 1.43 vs 1.21 ms for LayerNorm(x + r) at 1024 x 768), so
    # off by default.
    fuse_reductions_with_grad = False


config = _Config()


class _Eager:
    """An entry that runs the original function (tracing failed or was refused)."""

    def __init__(self, reason):
        self.reason = reason


class _Entry:
    def __init__(self, sig, dyn, runner, kernels, graph_text):
        self.sig = sig
        self.dyn = dyn
        self.runner = runner
        self.kernels = kernels
        self.graph_text = graph_text


def _leaves(x, path, out, tensors):
    if isinstance(x, _C.Tensor):
        out.append((path, "T", x.dtype, str(x.device), bool(x.requires_grad), tuple(x.shape)))
        tensors.append(x)
    elif isinstance(x, (tuple, list)):
        out.append((path, type(x).__name__, len(x)))
        for i, y in enumerate(x):
            _leaves(y, f"{path}[{i}]", out, tensors)
    elif isinstance(x, dict):
        out.append((path, "dict", tuple(x.keys())))
        for k, y in x.items():
            _leaves(y, f"{path}[{k!r}]", out, tensors)
    elif isinstance(x, slice):
        out.append((path, "V", "slice", (x.start, x.stop, x.step)))
    else:
        try:  # numbers, strings, dtypes, devices, functions, modules: by value or identity
            hash(x)
            out.append((path, "V", type(x).__name__, x))
        except TypeError:
            out.append((path, "O", type(x).__name__, id(x)))


def _rebuild(x, tensors, it):
    if isinstance(x, _C.Tensor):
        return tensors[next(it)]
    if isinstance(x, (tuple, list)):
        vals = [_rebuild(y, tensors, it) for y in x]
        return type(x)(vals) if not hasattr(x, "_fields") else type(x)(*vals)
    if isinstance(x, dict):
        return {k: _rebuild(y, tensors, it) for k, y in x.items()}
    return x


def _dyn_leaf(leaf):
    if leaf[1] != "T":
        return leaf
    shape = tuple(s if s in (0, 1) else -1 for s in leaf[5])
    return leaf[:5] + (shape,)


def _state(module):
    autocast = (_C._autocast_is_enabled("cpu"), _C._autocast_is_enabled("cuda"))
    st = (bool(_C.is_grad_enabled()), autocast)
    if module is not None:
        st += (bool(module.training), tuple(id(p) for p in module.parameters()))
    return st


def _first_difference(old, new, old_state, new_state, module):
    """PyTorch-style guard text: 'x.shape[0] was 3, now 4'."""
    if old_state[0] != new_state[0]:
        return f"grad mode was {'enabled' if old_state[0] else 'disabled'}, now " \
               f"{'enabled' if new_state[0] else 'disabled'}"
    if old_state[1] != new_state[1]:
        dev = "cpu" if old_state[1][0] != new_state[1][0] else "cuda"
        on = new_state[1][0 if dev == "cpu" else 1]
        return f"autocast({dev!r}) was {'off' if on else 'on'}, now {'on' if on else 'off'}"
    if module is not None and old_state[2] != new_state[2]:
        return f"self.training was {old_state[2]}, now {new_state[2]}"
    if module is not None and old_state[3] != new_state[3]:
        return "the module's parameters were replaced"
    if len(old) != len(new):
        return "the structure of the arguments changed"
    for a, b in zip(old, new):
        if a == b:
            continue
        path = b[0]
        if a[1] != b[1] or a[0] != b[0]:
            return f"{path} was a {a[1]}, now a {b[1]}"
        if b[1] == "T":
            if a[2] != b[2]:
                return f"{path}.dtype was {a[2]}, now {b[2]}"
            if a[3] != b[3]:
                return f"{path}.device was {a[3]}, now {b[3]}"
            if a[4] != b[4]:
                return f"{path}.requires_grad was {a[4]}, now {b[4]}"
            if len(a[5]) != len(b[5]):
                return f"{path}.dim() was {len(a[5])}, now {len(b[5])}"
            for d, (x, y) in enumerate(zip(a[5], b[5])):
                if x != y and x != -1:
                    return f"{path}.shape[{d}] was {x}, now {y}"
        elif b[1] == "V":
            return f"{path} was {a[3]!r}, now {b[3]!r}"
        else:
            return f"{path} changed ({a[2:]} -> {b[2:]})"
    return "the inputs changed"


class _Compiled:
    """The per-function state: its compiled entries and its settings."""

    def __init__(self, fn, module, dynamic, fullgraph, mode, backend):
        self.fn = fn
        self.module = module
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.mode = mode
        self.backend = backend
        self.static = {}  # key -> entry
        self.dyn = {}
        self.entries = []
        self.last = None  # (leaves, state) of the last compiled entry
        self.limit_warned = False
        self.shape_changed = False
        try:
            self.names = [p.name for p in inspect.signature(fn).parameters.values()]
        except (TypeError, ValueError):
            self.names = []
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))

    def _arg_path(self, i):
        return self.names[i] if i < len(self.names) else f"args[{i}]"

    def signature(self, args, kwargs):
        leaves, tensors = [], []
        for i, a in enumerate(args):
            _leaves(a, self._arg_path(i), leaves, tensors)
        for k in sorted(kwargs):
            _leaves(kwargs[k], k, leaves, tensors)
        return leaves, tensors

    def __call__(self, *args, **kwargs):
        leaves, tensors = self.signature(args, kwargs)
        state = _state(self.module)
        key = (tuple(leaves), state)
        es = self.static.get(key)
        if es is None and self.dyn:
            es = self.dyn.get((tuple(_dyn_leaf(x) for x in leaves), state))
        if es is None:
            es = [self._compile(args, kwargs, leaves, tensors, state)]
        return self._run(es, args, kwargs, leaves, tensors, state)

    def _run(self, es, args, kwargs, leaves, tensors, state):
        reason = None
        for e in list(es):
            if isinstance(e, _Eager):
                return self.fn(*args, **kwargs)
            try:
                return e.runner(*tensors)
            except RuntimeError as err:
                msg = str(err)
                if "guard failed" not in msg:
                    raise
                # The trace took a path these inputs do not take: try the signature's other
                # traces, then trace again for these inputs.
                reason = msg.split(". The trace recorded")[0].replace("ember.jit: ", "")
        e = self._compile(args, kwargs, leaves, tensors, state, reason=reason)
        if isinstance(e, _Eager):
            return self.fn(*args, **kwargs)
        return e.runner(*tensors)

    def _compile(self, args, kwargs, leaves, tensors, state, reason=None):
        dyn = self.dynamic is True
        if reason is None and self.last is not None:
            reason = _first_difference(self.last[0], leaves, self.last[1], state, self.module)
            old = [x for x in self.last[0]]
            if self.dynamic is None and len(old) == len(leaves) and self.last[1] == state and all(
                    _dyn_leaf(a) == _dyn_leaf(b) for a, b in zip(old, leaves)):
                dyn = True  # only sizes changed: automatic dynamic shapes
        if len(self.entries) >= config.cache_size_limit:
            if not self.limit_warned:
                self.limit_warned = True
                warnings.warn(
                    f"ember.compile: {self.name} hit config.cache_size_limit "
                    f"({config.cache_size_limit}); last reason: {reason}. Running eagerly "
                    "for new signatures from now on.", stacklevel=4)
            e = _Eager("cache_size_limit")
            self.static.setdefault((tuple(leaves), state), []).append(e)
            return e
        if reason is not None:
            _log.recompiles(f"Recompiling function {self.name}: {reason}")
            warnings.warn(f"ember.compile: recompiling {self.name}: {reason}", stacklevel=4)
        self.last = (leaves, state)
        try:
            e = self._trace_and_fuse(args, kwargs, leaves, tensors, dyn)
        except Exception as err:  # noqa: BLE001 - any failure to trace falls back
            if self.fullgraph or config.suppress_errors is None:
                raise
            msg = f"{type(err).__name__}: {err}"
            _log.graph_breaks(f"{self.name}: {msg}")
            warnings.warn(f"ember.compile: {self.name} cannot be compiled and runs eagerly "
                          f"for this signature ({msg.splitlines()[0]})", stacklevel=4)
            e = _Eager(msg)
        self.entries.append(e)
        if dyn and not isinstance(e, _Eager):
            self.dyn.setdefault((tuple(_dyn_leaf(x) for x in leaves), state), []).append(e)
        else:
            self.static.setdefault((tuple(leaves), state), []).append(e)
        return e

    def _trace_and_fuse(self, args, kwargs, leaves, tensors, dyn):
        from ..jit import _trace
        from . import _runtime
        fn = self.fn
        template = (args, kwargs)

        def flat(*ts):
            a, k = _rebuild(template, ts, iter(range(len(ts))))
            return fn(*a, **k)
        flat.__name__ = getattr(fn, "__name__", "forward")
        if not tensors:
            raise RuntimeError("ember.compile: the call has no tensor arguments")
        # trace on detached copies of the inputs' identity: the traced run computes the
        # first call's result, which is discarded (the compiled graph runs instead)
        # The generator is put back afterwards: the compiled graph then draws the first
        # call's random numbers as eager would have (Note [Fused dropout]).
        rng = _C.get_rng_state()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", _trace.TracerWarning)
                g, _, _ = _trace._run_traced(flat, tuple(tensors))
        finally:
            _C.set_rng_state(rng)
        paths = [leaf[0] for leaf in leaves if leaf[1] == "T"]
        for v, path in zip(g.inputs(), paths):
            v.set_name(_safe(path).strip("_") or "x")
        _C._jit_pass_optimize(g)
        _log.graph(f"traced graph of {self.name}:\n{g}")
        grad = _C.is_grad_enabled()
        kernels = []
        if self.backend not in ("eager", "aot_eager"):  # "eager": trace and replay, no fusion
            devices = {str(t.device) for t in tensors}
            kernels = _runtime.fuse_graph(g, [grad and t.requires_grad for t in tensors],
                                          fn_name=_safe(self.name),
                                          device=devices.pop() if len(devices) == 1 else None)
        _C._jit_pass_dce(g)
        _log.graph(f"fused graph of {self.name}:\n{g}")
        f = _C._jit_Function(flat.__name__, g)
        return _Entry(leaves, dyn, f, kernels, str(g))


def _safe(name):
    return "".join(c if c.isalnum() else "_" for c in name)


class _CompiledFunction:
    """What compile(fn) returns for a function or bound method."""

    def __init__(self, fn, state):
        self._orig_fn = fn
        self._state = state
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self._state(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def graph_for(self, *args, **kwargs):
        """The fused graph the last compiled entry for these inputs runs (text)."""
        self._state(*args, **kwargs)
        e = _lookup(self._state, args, kwargs)
        return e.graph_text if isinstance(e, _Entry) else None


def _lookup(st, args, kwargs):
    leaves, _ = st.signature(args, kwargs)
    state = _state(st.module)
    es = st.static.get((tuple(leaves), state))
    if es is None:
        es = st.dyn.get((tuple(_dyn_leaf(x) for x in leaves), state))
    return es[-1] if es else None


def _module_class():
    from ..nn.modules.module import Module

    class OptimizedModule(Module):
        """compile(module): calls go through the compiled forward; the original module is
        ``_orig_mod`` and its parameters are this module's, so ``state_dict()`` has the
        same keys as the original's (PyTorch prefixes them with ``_orig_mod.``; ember
        does not, so a compiled model's checkpoint loads into the uncompiled model)."""

        def __init__(self, mod, state):
            Module.__init__(self)
            object.__setattr__(self, "_orig_mod", mod)
            object.__setattr__(self, "_compiled_state", state)

        def forward(self, *args, **kwargs):
            return self._compiled_state(*args, **kwargs)

        def __call__(self, *args, **kwargs):
            return self._compiled_state(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(object.__getattribute__(self, "_orig_mod"), name)

        # the module tree, parameters and state are the original's
        def state_dict(self, *a, **k):
            return self._orig_mod.state_dict(*a, **k)

        def load_state_dict(self, *a, **k):
            return self._orig_mod.load_state_dict(*a, **k)

        def parameters(self, recurse=True):
            return self._orig_mod.parameters(recurse)

        def named_parameters(self, *a, **k):
            return self._orig_mod.named_parameters(*a, **k)

        def buffers(self, recurse=True):
            return self._orig_mod.buffers(recurse)

        def named_buffers(self, *a, **k):
            return self._orig_mod.named_buffers(*a, **k)

        def children(self):
            return self._orig_mod.children()

        def named_children(self):
            return self._orig_mod.named_children()

        def modules(self):
            return self._orig_mod.modules()

        def named_modules(self, *a, **k):
            return self._orig_mod.named_modules(*a, **k)

        def train(self, mode=True):
            self._orig_mod.train(mode)
            return self

        def eval(self):
            return self.train(False)

        @property
        def training(self):
            return object.__getattribute__(self, "_orig_mod").training

        @training.setter
        def training(self, v):
            pass

        def zero_grad(self, set_to_none=True):
            return self._orig_mod.zero_grad(set_to_none)

        def to(self, *a, **k):
            self._orig_mod.to(*a, **k)
            return self

        def __repr__(self):
            return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"

    return OptimizedModule


_OptimizedModule = None


def __getattr__(name):
    if name == "OptimizedModule":
        return _optimized_module_class()
    raise AttributeError(name)


def _optimized_module_class():
    global _OptimizedModule
    if _OptimizedModule is None:
        _OptimizedModule = _module_class()
    return _OptimizedModule


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):
    """Compiles a function, bound method or module (torch.compile). Returns a callable
    (an OptimizedModule for a module) that traces each new input signature once, fuses
    its elementwise chains into generated C++ kernels and replays the optimized graph.
    Used as a decorator with or without arguments."""
    if model is None:
        def deco(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)
        return deco
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune",
                                         "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, "
                           "reduce-overhead, max-autotune, max-autotune-no-cudagraphs")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if backend not in (None, "inductor", "eager", "aot_eager", "ember") and not callable(backend):
        raise ValueError(f"ember.compile: unknown backend {backend!r}")
    if not callable(model):
        raise RuntimeError("ember.compile: expected a callable (function, method or nn.Module), "
                           f"got {type(model).__name__}")
    if disable:
        return model
    from ..nn.modules.module import Module
    if isinstance(model, Module):
        st = _Compiled(model, model, dynamic, fullgraph, mode, backend)
        try:
            st.names = [p.name for p in inspect.signature(model.forward).parameters.values()]
        except (TypeError, ValueError):
            pass
        st.name = type(model).__name__ + ".forward"
        return _optimized_module_class()(model, st)
    module = getattr(model, "__self__", None)
    st = _Compiled(model, module if isinstance(module, Module) else None, dynamic, fullgraph,
                   mode, backend)
    return _CompiledFunction(model, st)


def reset():
    """Forgets compiled kernels loaded in this process (the disk cache stays)."""
    from . import _toolchain
    _toolchain._loaded.clear()
