"""Activations (nn.functional and the modules) against NumPy references, gradcheck and
gradgradcheck in float64, in-place forms, edge points (kinks, NaN, huge inputs) and
PyTorch's errors."""
import math

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x, beta=1.0, th=20.0):
    return np.where(x * beta > th, x, np.log1p(np.exp(np.minimum(x * beta, th))) / beta)


_erf = np.vectorize(math.erf)
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (ember callable, numpy reference)
CASES = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "selu": (F.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    "silu": (F.silu, lambda x: x * _sig(x)),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x))),
    "sigmoid": (F.sigmoid, _sig),
    "tanh": (F.tanh, np.tanh),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardshrink": (lambda x: F.hardshrink(x, 0.4),
                   lambda x: np.where((x >= -0.4) & (x <= 0.4), 0, x)),
    "softshrink": (lambda x: F.softshrink(x, 0.4),  # 0 * x keeps a NaN, as PyTorch
                   lambda x: np.where(x > 0.4, x - 0.4, np.where(x < -0.4, x + 0.4, 0 * x))),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "softplus": (lambda x: F.softplus(x, 2.0, 5.0), lambda x: _softplus(x, 2.0, 5.0)),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "logsigmoid": (F.logsigmoid, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
    "threshold": (lambda x: F.threshold(x, 0.3, -2.0), lambda x: np.where(x <= 0.3, -2.0, x)),
}


def _points(seed=0, n=40):
    # away from every kink by more than gradcheck's eps
    a = np.random.default_rng(seed).uniform(-6, 6, n)
    kinks = np.array([0, 6, -0.5, 2.0, -3, 3, 0.4, -0.4, 0.3, 2.5])
    for k in kinks:
        a = np.where(np.abs(a - k) < 1e-3, a + 0.01, a)
    return a.reshape(5, 8)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward(name, dtype, device):
    f, ref = CASES[name]
    a = _points()
    out = f(t(a, getattr(ember, dtype), device))
    assert out.dtype == getattr(ember, dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(out.cpu().numpy(), ref(a), atol=tol, rtol=tol * 10)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name, device):
    f, _ = CASES[name]
    x = t(_points(1), device=device, rg=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_huge_inputs_have_finite_grads(device):
    a = np.array([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4])
    for name in ["elu", "selu", "celu", "softplus", "mish", "silu", "logsigmoid", "gelu"]:
        f, ref = CASES[name]
        x = t(a, device=device, rg=True)
        y = f(x)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref(a), atol=1e-9, err_msg=name)
        y.sum().backward()
        assert np.isfinite(x.grad.cpu().numpy()).all(), name


def test_nan_propagates(device):
    x = t([float("nan"), 1.0], device=device)
    for name in ["relu", "leaky_relu", "elu", "hardtanh", "gelu", "softplus", "hardswish"]:
        assert math.isnan(CASES[name][0](x)[0].item()), name


def test_grad_at_kinks_match_torch(device):
    # PyTorch's backward conventions at the breakpoints
    x = t([0.0], device=device, rg=True)
    F.leaky_relu(x, 0.1).sum().backward()
    assert x.grad.item() == pytest.approx(0.1)
    x = t([-1.0, 1.0], device=device, rg=True)
    F.hardtanh(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    x = t([-3.0, 3.0], device=device, rg=True)
    F.hardswish(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([-0.5, 1.5])
    x = t([0.0], device=device, rg=True)
    F.elu(x, 2.0).sum().backward()
    assert x.grad.item() == pytest.approx(2.0)


def test_integer_inputs(device):
    x = ember.tensor([-2, 0, 3], device=device)
    assert F.relu6(x).tolist() == [0, 0, 3]
    assert F.threshold(x, 0, 7).tolist() == [7, 7, 3]
    assert F.gelu(x).dtype == ember.get_default_dtype()


@pytest.mark.parametrize("name,fn", [("relu", F.relu), ("relu6", F.relu6),
                                     ("leaky_relu", F.leaky_relu), ("elu", F.elu),
                                     ("selu", F.selu), ("celu", F.celu), ("silu", F.silu),
                                     ("mish", F.mish), ("hardtanh", F.hardtanh),
                                     ("hardsigmoid", F.hardsigmoid),
                                     ("hardswish", F.hardswish)])
def test_inplace(name, fn, device):
    a = _points(2)
    x = t(a, device=device)
    expected = fn(x).cpu().numpy()
    y = fn(x, inplace=True)
    assert y is x
    np.testing.assert_allclose(x.cpu().numpy(), expected)
    # under autograd, on a non-leaf
    leaf = t(a, device=device, rg=True)
    h = leaf * 1.0
    fn(h, inplace=True)
    h.sum().backward()
    leaf2 = t(a, device=device, rg=True)
    fn(leaf2 * 1.0).sum().backward()
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), leaf2.grad.cpu().numpy())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(t(a, device=device, rg=True), inplace=True)


def test_threshold_inplace(device):
    x = t([0.1, 0.5], device=device)
    F.threshold_(x, 0.3, 9.0)
    assert x.tolist() == [9.0, 0.5]


def test_prelu(device):
    a = np.random.default_rng(3).normal(size=(2, 3, 4))
    w = np.array([0.1, 0.2, 0.3])
    x = t(a, device=device, rg=True)
    wt = t(w, device=device, rg=True)
    out = F.prelu(x, wt)
    np.testing.assert_allclose(out.detach().cpu().numpy(),
                               np.where(a > 0, a, w[None, :, None] * a))
    assert gradcheck(F.prelu, (x, wt))
    assert gradgradcheck(F.prelu, (x, wt))
    one = t([0.25], device=device)
    np.testing.assert_allclose(F.prelu(t(a, device=device), one).cpu().numpy(),
                               np.where(a > 0, a, 0.25 * a))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel"):
        F.prelu(t(a, device=device), t([0.1, 0.2], device=device))
    m = nn.PReLU(3)
    assert m.weight.tolist() == pytest.approx([0.25] * 3)


def test_glu(device):
    a = np.random.default_rng(4).normal(size=(3, 6))
    x = t(a, device=device, rg=True)
    np.testing.assert_allclose(F.glu(x, 1).detach().cpu().numpy(), a[:, :3] * _sig(a[:, 3:]))
    assert gradcheck(lambda v: F.glu(v, 1), (x,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(t(np.ones((3, 5)), device=device), 1)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 0 is "
                                           "size 3"):
        F.glu(x, 0)


def test_errors(device):
    x = t([1.0], device=device)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        F.elu(ember.tensor([True], device=device))


MODULES = [
    (nn.ReLU(), F.relu), (nn.ReLU6(), F.relu6), (nn.LeakyReLU(0.3), lambda x: F.leaky_relu(x, 0.3)),
    (nn.ELU(0.5), lambda x: F.elu(x, 0.5)), (nn.SELU(), F.selu), (nn.CELU(2.0), lambda x: F.celu(x, 2.0)),
    (nn.GELU("tanh"), lambda x: F.gelu(x, approximate="tanh")), (nn.SiLU(), F.silu),
    (nn.Mish(), F.mish), (nn.Sigmoid(), F.sigmoid), (nn.Tanh(), F.tanh),
    (nn.Hardtanh(-2.0, 2.0), lambda x: F.hardtanh(x, -2.0, 2.0)), (nn.Hardsigmoid(), F.hardsigmoid),
    (nn.Hardswish(), F.hardswish), (nn.Hardshrink(0.3), lambda x: F.hardshrink(x, 0.3)),
    (nn.Softshrink(0.3), lambda x: F.softshrink(x, 0.3)), (nn.Tanhshrink(), F.tanhshrink),
    (nn.Softplus(2.0, 10.0), lambda x: F.softplus(x, 2.0, 10.0)), (nn.Softsign(), F.softsign),
    (nn.LogSigmoid(), F.logsigmoid), (nn.Softmax(1), lambda x: F.softmax(x, 1)),
    (nn.LogSoftmax(1), lambda x: F.log_softmax(x, 1)), (nn.Softmin(1), lambda x: F.softmin(x, 1)),
    (nn.GLU(), F.glu), (nn.Threshold(0.1, 20.0), lambda x: F.threshold(x, 0.1, 20.0)),
]


@pytest.mark.parametrize("i", range(len(MODULES)))
def test_modules(i, device):
    m, f = MODULES[i]
    x = t(_points(5), device=device)
    np.testing.assert_allclose(m(x).cpu().numpy(), f(x).cpu().numpy())


def test_module_inplace_and_repr(device):
    x = t([-1.0, 2.0], device=device)
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 2.0]
    if hasattr(nn, "Module"):  # the module repr comes with nn.Module
        assert repr(nn.LeakyReLU(0.2, inplace=True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
        assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert nn.LeakyReLU(0.2, inplace=True).extra_repr() == "negative_slope=0.2, inplace=True"
    assert nn.GELU().extra_repr() == "approximate='none'"


def test_rrelu(device):
    ember.manual_seed(0)
    x = t(np.linspace(-3, 3, 1000), device=device, rg=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    a, yv = x.detach().cpu().numpy(), y.detach().cpu().numpy()
    slope = yv[a < 0] / a[a < 0]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    np.testing.assert_array_equal(yv[a >= 0], a[a >= 0])
    y.sum().backward()
    g = x.grad.cpu().numpy()
    np.testing.assert_allclose(g[a < 0], slope)
    ev = F.rrelu(x.detach(), 0.1, 0.3)
    np.testing.assert_allclose(ev.cpu().numpy(), np.where(a >= 0, a, 0.2 * a))
    m = nn.RReLU(0.1, 0.3)
    m.eval()
    np.testing.assert_allclose(m(x.detach()).cpu().numpy(), np.where(a >= 0, a, 0.2 * a))


# ---- the fused kernels (issue 7): PyTorch's nodes, in-place forms, dtypes, layouts ----------

# name -> (f, grad_fn of f(x), grad_fn of the first derivative under create_graph), as
# PyTorch 2.15 records them (test_node_names_match_torch checks this table against it).
NODES = {
    "gelu": (F.gelu, "GeluBackward0", "GeluBackwardBackward0"),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), "GeluBackward0",
                  "GeluBackwardBackward0"),
    "silu": (F.silu, "SiluBackward0", "MulBackward0"),
    "softplus": (lambda x: F.softplus(x, 2.0, 5.0), "SoftplusBackward0",
                 "SoftplusBackwardBackward0"),
    "mish": (F.mish, "MishBackward0", "MulBackward0"),
    "elu": (lambda x: F.elu(x, 1.5), "EluBackward0", "EluBackwardBackward0"),
    "celu": (lambda x: F.celu(x, 0.7), "CeluBackward0", "EluBackwardBackward0"),
    "selu": (F.selu, "EluBackward0", "EluBackwardBackward0"),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), "LeakyReluBackward0",
                   "LeakyReluBackwardBackward0"),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), "HardtanhBackward0",
                 "HardtanhBackwardBackward0"),
    "relu6": (F.relu6, "HardtanhBackward0", "HardtanhBackwardBackward0"),
    "hardswish": (F.hardswish, "HardswishBackward0", "HardswishBackwardBackward0"),
    "hardsigmoid": (F.hardsigmoid, "HardsigmoidBackward0", None),
    "logsigmoid": (F.logsigmoid, "LogSigmoidBackward0", "LogSigmoidBackwardBackward0"),
    "hardshrink": (lambda x: F.hardshrink(x, 0.4), "HardshrinkBackward0",
                   "HardshrinkBackwardBackward0"),
    "softshrink": (lambda x: F.softshrink(x, 0.4), "SoftshrinkBackward0",
                   "SoftshrinkBackwardBackward0"),
    "threshold": (lambda x: F.threshold(x, 0.3, -2.0), "ThresholdBackward0",
                  "ThresholdBackwardBackward0"),
    "softsign": (F.softsign, "DivBackward0", "AddBackward0"),
    "tanhshrink": (F.tanhshrink, "SubBackward0", "AddBackward0"),
}

# in-place form -> (f_, grad_fn, grad_fn of the first derivative)
INPLACE_NODES = {
    "silu_": (lambda x: F.silu(x, inplace=True), "SiluBackward0", "MulBackward0"),
    "elu_": (lambda x: F.elu_(x, 1.5), "EluBackward1", "EluBackwardBackward0"),
    "celu_": (lambda x: F.celu_(x, 0.7), "CeluBackward1", "EluBackwardBackward0"),
    "selu_": (lambda x: F.selu_(x), "EluBackward1", "EluBackwardBackward0"),
    "leaky_relu_": (lambda x: F.leaky_relu_(x, 0.2), "LeakyReluBackward1",
                    "LeakyReluBackwardBackward0"),
    "hardtanh_": (lambda x: F.hardtanh_(x, -0.5, 2.0), "HardtanhBackward0",
                  "HardtanhBackwardBackward0"),
    "relu6_": (lambda x: F.relu6(x, inplace=True), "HardtanhBackward0",
               "HardtanhBackwardBackward0"),
    "hardswish_": (lambda x: F.hardswish(x, inplace=True), "HardswishBackward0",
                   "HardswishBackwardBackward0"),
    "hardsigmoid_": (lambda x: F.hardsigmoid(x, inplace=True), "HardsigmoidBackward0", None),
    "mish_": (lambda x: F.mish(x, inplace=True), "MishBackward0", "MulBackward0"),
    "threshold_": (lambda x: F.threshold_(x, 0.3, -2.0), "ThresholdBackward1",
                   "ThresholdBackwardBackward0"),
}


def _node_names(f, inplace):
    x = t(_points(3), rg=True)
    y = f(x.clone() if inplace else x)
    (g,) = ember.autograd.grad(y.sum(), (x,), create_graph=True)
    return y.grad_fn.name(), (g.grad_fn.name() if g.grad_fn is not None else None)


# The fused kernels are CPU kernels: on a backend without them the composites run (same
# values, composite nodes), so the node names are checked on the CPU.
@pytest.mark.parametrize("name", sorted(NODES))
def test_node_names(name):
    f, node, node2 = NODES[name]
    got, got2 = _node_names(f, False)
    assert got == node
    if node2 is not None:  # PyTorch has no double backward for hardsigmoid
        assert got2 == node2


@pytest.mark.parametrize("name", sorted(INPLACE_NODES))
def test_inplace_node_names(name):
    f, node, node2 = INPLACE_NODES[name]
    got, got2 = _node_names(f, True)
    assert got == node
    if node2 is not None:
        assert got2 == node2


def test_node_names_match_torch():
    """The NODES / INPLACE_NODES tables against PyTorch, run in a subprocess."""
    import subprocess
    if TORCH_PY is None:
        pytest.skip("PyTorch is not installed")
    code = """
import torch, torch.nn.functional as F
x = torch.linspace(-5, 5, 37, dtype=torch.double, requires_grad=True)
fs = {
 'gelu': F.gelu, 'gelu_tanh': lambda x: F.gelu(x, approximate='tanh'), 'silu': F.silu,
 'softplus': lambda x: F.softplus(x, 2.0, 5.0), 'mish': F.mish, 'elu': lambda x: F.elu(x, 1.5),
 'celu': lambda x: F.celu(x, 0.7), 'selu': F.selu, 'leaky_relu': lambda x: F.leaky_relu(x, 0.2),
 'hardtanh': lambda x: F.hardtanh(x, -0.5, 2.0), 'relu6': F.relu6, 'hardswish': F.hardswish,
 'hardsigmoid': F.hardsigmoid, 'logsigmoid': F.logsigmoid,
 'hardshrink': lambda x: F.hardshrink(x, 0.4), 'softshrink': lambda x: F.softshrink(x, 0.4),
 'threshold': lambda x: F.threshold(x, 0.3, -2.0), 'softsign': F.softsign,
 'tanhshrink': F.tanhshrink,
 'silu_': lambda x: F.silu(x, inplace=True), 'elu_': lambda x: F.elu_(x, 1.5),
 'celu_': lambda x: F.celu_(x, 0.7), 'selu_': F.selu_,
 'leaky_relu_': lambda x: F.leaky_relu_(x, 0.2), 'hardtanh_': lambda x: F.hardtanh_(x, -0.5, 2.0),
 'relu6_': lambda x: F.relu6(x, inplace=True), 'hardswish_': lambda x: F.hardswish(x, inplace=True),
 'hardsigmoid_': lambda x: F.hardsigmoid(x, inplace=True), 'mish_': lambda x: F.mish(x, inplace=True),
 'threshold_': lambda x: F.threshold_(x, 0.3, -2.0)}
for k, f in fs.items():
    y = f(x.clone() if k.endswith('_') else x)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    print(k, y.grad_fn.name(), g.grad_fn.name() if g.grad_fn is not None else None)
"""
    out = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.strip().splitlines():
        k, node, node2 = line.split()
        _, want, want2 = (INPLACE_NODES if k.endswith("_") else NODES)[k]
        assert node == want, k
        if want2 is not None:
            assert node2 == want2, k


@pytest.mark.parametrize("name", sorted(INPLACE_NODES))
def test_inplace_gradgradcheck(name, device):
    # the *Backward1 nodes differentiate through the saved result
    f = INPLACE_NODES[name][0]
    x = t(_points(4), device=device, rg=True)
    assert gradcheck(lambda v: f(v * 1.0), (x,))
    assert gradgradcheck(lambda v: f(v * 1.0), (x,))


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "softplus", "elu", "logsigmoid", "silu",
                                  "mish", "hardswish"])
def test_third_derivative(name, device):
    # the *BackwardBackward0 formulas are ember ops, so they differentiate again
    f = NODES[name][0]
    x = t(_points(6)[:2] / 2, device=device, rg=True)

    def first(v):
        (g,) = ember.autograd.grad(f(v).sum(), (v,), create_graph=True)
        return g

    assert gradgradcheck(first, (x,))


@pytest.mark.parametrize("f,msg", [
    (lambda x: F.elu_(x, -1.0), "In-place elu backward calculation is triggered with a negative "
                                "slope which is not supported"),
    (lambda x: F.celu_(x, -1.0), "In-place elu backward calculation is triggered with a negative "
                                 "slope"),
    (lambda x: F.leaky_relu_(x, -0.1), "In-place leakyReLu backward calculation is triggered "
                                       "with a negative slope"),
])
def test_inplace_negative_slope(f, msg, device):
    a = _points(5)
    # forward works (no autograd, or a non-leaf under autograd); backward raises as PyTorch
    x = t(a, device=device)
    f(x)
    leaf = t(a, device=device, rg=True)
    y = f(leaf * 1.0)
    with pytest.raises(RuntimeError, match=msg):
        y.sum().backward()
    # in place on a leaf that requires grad: PyTorch's leaf error
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        f(t(a, device=device, rg=True))
    # the out-of-place form differentiates with a negative slope
    F.leaky_relu(leaf, -0.1).sum().backward()


FUSED = ["gelu", "gelu_tanh", "silu", "softplus", "mish", "elu", "selu", "celu", "leaky_relu",
         "hardtanh", "relu6", "hardswish", "hardsigmoid", "logsigmoid", "hardshrink",
         "softshrink", "threshold"]


@pytest.mark.parametrize("name", FUSED)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision(name, dtype, device):
    # half / bfloat16 compute in float and round once
    f, ref = CASES[name]
    a = _points(8)
    x = t(a, getattr(ember, dtype), device)
    out = f(x)
    assert out.dtype == getattr(ember, dtype)
    exact = ref(x.double().cpu().numpy())
    tol = 1e-3 if dtype == "float16" else 8e-3
    np.testing.assert_allclose(out.double().cpu().numpy(), exact, rtol=tol, atol=tol)
    xr = x.detach().requires_grad_(True)
    f(xr).sum().backward()
    assert xr.grad.dtype == x.dtype
    x64 = x.double().requires_grad_(True)
    f(x64).sum().backward()
    np.testing.assert_allclose(xr.grad.double().cpu().numpy(), x64.grad.cpu().numpy(),
                               rtol=4 * tol, atol=4 * tol)


@pytest.mark.parametrize("name", FUSED)
def test_layouts(name, device):
    # non-contiguous, 0-d, empty, and the in-place kernel on a strided view
    f, ref = CASES[name]
    a = np.random.default_rng(9).uniform(-6, 6, (8, 10))
    x = t(a, device=device).t()[::2]
    assert not x.is_contiguous()
    np.testing.assert_allclose(f(x).cpu().numpy(), ref(a.T[::2]), rtol=1e-12, atol=1e-12)
    s = t(np.array(0.7), device=device)
    assert f(s).dim() == 0 and f(s).item() == pytest.approx(float(ref(np.array(0.7))))
    e = t(np.zeros((0, 3)), device=device, rg=True)
    y = f(e)
    assert tuple(y.shape) == (0, 3)
    y.sum().backward()
    assert tuple(e.grad.shape) == (0, 3)
    xs = x.cpu().numpy().copy()
    xr = t(a, device=device, rg=True)
    (g,) = ember.autograd.grad(f(xr.t()[::2]).sum(), (xr,))
    g64 = np.zeros_like(a)
    x64 = t(a.T[::2].copy(), device=device, rg=True)
    f(x64).sum().backward()
    g64.T[::2] = x64.grad.cpu().numpy()
    np.testing.assert_allclose(g.cpu().numpy(), g64, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(x.cpu().numpy(), xs)


@pytest.mark.parametrize("name", ["silu", "elu", "selu", "celu", "leaky_relu", "hardtanh",
                                  "relu6", "hardswish", "hardsigmoid", "mish"])
def test_inplace_on_strided_view_without_grad(name, device):
    fi = dict(MODULE_INPLACE)[name]
    f, ref = CASES[name]
    a = np.random.default_rng(10).uniform(-6, 6, (8, 10))
    base = t(a, device=device)
    view = base[:, 1::3]
    assert fi(view) is view
    want = a.copy()
    want[:, 1::3] = ref(a[:, 1::3])
    np.testing.assert_allclose(base.cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        fi(t([1.0], device=device).expand(3))


MODULE_INPLACE = [
    ("silu", lambda x: F.silu(x, inplace=True)), ("elu", lambda x: F.elu(x, 1.5, inplace=True)),
    ("selu", lambda x: F.selu(x, inplace=True)), ("celu", lambda x: F.celu(x, 0.7, inplace=True)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2, inplace=True)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0, inplace=True)),
    ("relu6", lambda x: F.relu6(x, inplace=True)), ("hardswish", lambda x: F.hardswish(x, True)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x, True)), ("mish", lambda x: F.mish(x, True)),
]


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "softplus", "mish", "logsigmoid",
                                  "elu"])
def test_float32_accuracy_wide_range(name, device):
    # the vectorized float exp / log1p / tanh / erf of the kernels against float64
    f, ref = CASES[name]
    a = np.linspace(-30, 30, 20001)
    x = t(a, ember.float32, device, rg=True)
    y = f(x)
    exact = ref(a.astype(np.float32).astype(np.float64))
    got = y.detach().cpu().double().numpy()
    # an atol growing with |x| (numpy's assert_allclose takes only a scalar atol)
    tol = 3e-7 * np.maximum(1, np.abs(a)) + 2e-6 * np.abs(exact)
    bad = np.abs(got - exact) > tol
    assert not bad.any(), (name, a[bad][:5], got[bad][:5], exact[bad][:5])
    y.sum().backward()
    x64 = t(a.astype(np.float32), ember.float64, device, rg=True)
    f(x64).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().double().numpy(), x64.grad.cpu().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_special_values(device):
    inf, nan = float("inf"), float("nan")
    x = t([-inf, -1e4, -0.0, 0.0, 1e4, inf, nan], device=device)
    for name in FUSED:
        f, ref = CASES[name]
        with np.errstate(all="ignore"):
            want = ref(x.cpu().numpy())
        np.testing.assert_allclose(f(x).cpu().numpy(), want, rtol=1e-12, atol=1e-300,
                                   err_msg=name)
