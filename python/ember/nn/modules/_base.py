"""What the layer modules of this package build on: nn.Module and Parameter.

Until ember.nn.Module lands (modules/module.py), a minimal stand-in keeps the layer
classes importable and usable: attributes, ``__call__`` -> ``forward``,
``train``/``eval`` and ``parameters()``. It is replaced by the real classes as soon
as they exist.
"""
try:
    from .module import Module  # noqa: F401
except ImportError:  # pragma: no cover - only before nn.Module exists
    class Module:
        def __init__(self, *args, **kwargs):
            object.__setattr__(self, "training", True)

        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

        def train(self, mode=True):
            self.training = mode
            for v in vars(self).values():
                if isinstance(v, Module):
                    v.train(mode)
            return self

        def eval(self):
            return self.train(False)

        def parameters(self):
            import ember
            for v in vars(self).values():
                if isinstance(v, ember.Tensor) and v.requires_grad and v.grad_fn is None:
                    yield v

        def register_buffer(self, name, tensor, persistent=True):
            setattr(self, name, tensor)

        def register_parameter(self, name, param):
            setattr(self, name, param)

try:
    from ..parameter import Parameter  # noqa: F401
except ImportError:  # pragma: no cover - only before nn.Parameter exists
    def Parameter(data=None, requires_grad=True):
        import ember
        t = ember.empty(0) if data is None else data.detach()
        return t.requires_grad_(requires_grad)
