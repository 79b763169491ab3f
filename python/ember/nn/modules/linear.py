"""nn modules: Identity, Linear, Bilinear, Flatten, Unflatten (as torch.nn)."""
import math

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten"]
# NonDynamicallyQuantizableLinear is reachable here, as in torch.nn.modules.linear, but not
# exported from ember.nn (torch.nn does not export it either).


def _uniform_(t, bound):
    """U(-bound, bound) in place, outside autograd (nn.init.uniform_'s distribution)."""
    from ...autograd import no_grad
    with no_grad():
        t.uniform_(-bound, bound)
    return t


class Identity(Module):
    """Returns its input; constructor arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b; weight (out_features, in_features) and bias drawn from
    U(-1/sqrt(in_features), 1/sqrt(in_features)), as torch's kaiming_uniform_(a=sqrt(5))."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        import ember
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in_features), device=device,
                                            dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = self.in_features
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        if input.dim() == 0 or input.shape[-1] != self.in_features:
            raise RuntimeError(
                f"Linear(in_features={self.in_features}, out_features={self.out_features}) got "
                f"input of shape {list(input.shape)}: the last dimension must be "
                f"{self.in_features}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under its own name: MultiheadAttention's out_proj (PyTorch uses the name to
    keep dynamic quantization off it)."""


class Bilinear(Module):
    """y = x1^T A x2 + b; weight (out, in1, in2) and bias from U(-1/sqrt(in1), 1/sqrt(in1))."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        import ember
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in1_features, in2_features),
                                            device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] > 0 else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dims are not supported; pass an int dim")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of "
                                f"type {type(s).__name__} at pos {i}")
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
