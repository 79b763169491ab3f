"""nn modules: activations, as torch.nn (the math is C++, through nn.functional)."""
from ..._errors import ArgumentAssertionError
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Mish", "Hardsigmoid", "Hardswish", "GELU", "Sigmoid", "Tanh", "Hardshrink", "Softshrink", "Tanhshrink", "Softplus", "Softsign", "LogSigmoid", "GLU", "Hardtanh", "Threshold", "PReLU", "RReLU", "Softmax", "LogSoftmax", "Softmin"]


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU6(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu6(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def extra_repr(self):
        s = f"negative_slope={self.negative_slope}"
        return s + (", inplace=True" if self.inplace else "")


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, inplace=self.inplace)

    def extra_repr(self):
        s = f"alpha={self.alpha}"
        return s + (", inplace=True" if self.inplace else "")


class SELU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class CELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, inplace=self.inplace)

    def extra_repr(self):
        s = f"alpha={self.alpha}"
        return s + (", inplace=True" if self.inplace else "")


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Hardsigmoid(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Hardswish(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate='none'):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return F.tanh(input)


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"lambd={self.lambd}"


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return f"lambd={self.lambd}"


class Tanhshrink(Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return F.tanhshrink(input)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return F.logsigmoid(input)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ArgumentAssertionError("max_val must be greater than min_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        s = f"min_val={self.min_val}, max_val={self.max_val}"
        return s + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        s = f"lower={self.lower}, upper={self.upper}"
        return s + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        s = f"threshold={self.threshold}, value={self.value}"
        return s + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """max(0, x) + weight * min(0, x); weight (num_parameters) initialized to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        import ember
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        from ...autograd import no_grad
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        self.__dict__.update(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


def __getattr__(name):
    # torch.nn.modules.activation also holds MultiheadAttention (and the out_proj Linear it
    # uses); ember defines them in transformer.py and linear.py, imported here on first use
    # to keep the import order acyclic.
    if name == "MultiheadAttention":
        from .transformer import MultiheadAttention

        return MultiheadAttention
    if name == "NonDynamicallyQuantizableLinear":
        from .linear import NonDynamicallyQuantizableLinear

        return NonDynamicallyQuantizableLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
