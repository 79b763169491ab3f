"""ember.autograd.Function: custom differentiable operations written in Python."""
from .. import _C
from .grad_mode import no_grad


class FunctionCtx:
    """The ``ctx`` of a custom Function: save tensors and state for backward."""

    def __init__(self):
        self._saved = None
        self._saved_versions = None
        self._fn_name = "Function"
        self._non_differentiable = []
        self._dirty = []
        self._materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)
        for t in tensors:
            if t is not None:
                _C._watch_version(t)

    @property
    def saved_tensors(self):
        if self._saved is None:
            if self._saved_versions == "freed":
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access saved "
                    "tensors after they have already been freed). Saved intermediate values of the "
                    "graph are freed when you call .backward() or autograd.grad(). Specify "
                    "retain_graph=True if you need to backward through the graph a second time or if "
                    "you need to access saved tensors after calling backward.")
            return ()
        for t, v in zip(self._saved, self._saved_versions):
            if t is not None:
                _C._check_saved_version(t, v, self._fn_name)
        return self._saved

    def mark_dirty(self, *tensors):
        self._dirty = list(tensors)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = list(tensors)

    def set_materialize_grads(self, value: bool):
        self._materialize_grads = bool(value)

    def _free(self):
        if self._saved is not None:
            self._saved = None
            self._saved_versions = "freed"


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = name + "Backward"


class Function(metaclass=_FunctionMeta):
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``. ``forward`` runs with grad disabled (it may re-enable it itself);
    ``backward`` returns one gradient per ``forward`` argument (None for non-tensors)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        ctx._fn_name = cls._backward_name
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad and _C.is_grad_enabled()
                                     for a in args)
        record = _C._needs_grad(list(args))
        with no_grad():
            outputs = cls.forward(ctx, *args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if record:
            inputs = [a if isinstance(a, _C.Tensor) else None for a in args]
            # An output that is also an input (and not marked dirty) must become a new
            # tensor, or the input's own history would be overwritten.
            outs = tuple(o.view_as(o) if isinstance(o, _C.Tensor) and any(o is a for a in args)
                         and not any(o is d for d in ctx._dirty) else o for o in outs)
            _C._function_record(cls._backward_name, lambda *g: cls.backward(ctx, *g), ctx._free,
                                inputs, list(outs), list(ctx._non_differentiable),
                                list(ctx._dirty), ctx._materialize_grads)
        return outs[0] if single else outs


# PyTorch's old name for the context type.
BackwardCFunction = FunctionCtx
