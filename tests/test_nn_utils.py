"""nn.utils: gradient clipping (against NumPy), parameter/vector conversion,
parametrize, parametrizations.weight_norm/spectral_norm and the legacy hooks."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn as nn
from ember.autograd import gradcheck, gradgradcheck
from ember.nn.utils import parametrizations as P
from ember.nn.utils import parametrize
from ember.nn.utils.weight_norm import _weight_norm, norm_except_dim


class Lin(nn.Module):
    def __init__(self, i, o, dtype=ember.float64):
        super().__init__()
        self.weight = nn.Parameter(ember.randn(o, i, dtype=dtype))
        self.bias = nn.Parameter(ember.randn(o, dtype=dtype))

    def forward(self, x):
        return x @ self.weight.T + self.bias


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def _params_with_grads(shapes, dtype=ember.float32):
    ps = []
    for s in shapes:
        p = nn.Parameter(ember.randn(*s, dtype=dtype))
        if s:
            p.grad = ember.randn(*s, dtype=dtype)
        else:
            p.grad = ember.randn((), dtype=dtype)
        ps.append(p)
    return ps


def _np_total_norm(grads, norm_type):
    flat = np.concatenate([g.reshape(-1) for g in grads]).astype(np.float64)
    if norm_type == math.inf:
        return np.abs(flat).max()
    if norm_type == 0:
        return float((flat != 0).sum())
    return (np.abs(flat) ** norm_type).sum() ** (1.0 / norm_type)


# ---- clipping --------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.5, 3, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_against_numpy(norm_type, max_norm):
    ps = _params_with_grads([(3, 4), (5,), (), (2, 3, 2)])
    ps.append(nn.Parameter(ember.ones(2)))  # no grad: skipped
    before = [p.grad.numpy().copy() for p in ps[:4]]
    nt = float(norm_type)
    total = nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    expected = _np_total_norm(before, nt)
    assert isinstance(total, ember.Tensor) and total.dim() == 0
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    coef = min(1.0, max_norm / (expected + 1e-6))
    for p, b in zip(ps[:4], before):
        np.testing.assert_allclose(p.grad.numpy(), b * coef, rtol=1e-5, atol=1e-7)
    assert ps[4].grad is None
    if max_norm < expected:
        after = _np_total_norm([p.grad.numpy() for p in ps[:4]], nt)
        np.testing.assert_allclose(after, max_norm, rtol=1e-4)


def test_clip_grad_norm_forms_and_errors():
    p = _params_with_grads([(4,)])[0]
    g0 = p.grad.numpy().copy()
    total = nn.utils.clip_grad_norm_(p, 1e-3)  # a single tensor
    np.testing.assert_allclose(total.item(), np.linalg.norm(g0), rtol=1e-6)
    assert nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
    gen = (q for q in _params_with_grads([(2,), (3,)]))
    assert nn.utils.clip_grad_norm_(gen, 1.0).item() > 0
    bad = _params_with_grads([(3,)])[0]
    with ember.no_grad():
        bad.grad.fill_(math.nan)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        nn.utils.clip_grad_norm_([bad], 1.0, error_if_nonfinite=True)
    assert math.isnan(nn.utils.clip_grad_norm_([bad], 1.0).item())
    # float64 and float32 gradients together
    mixed = _params_with_grads([(2,)]) + _params_with_grads([(3,)], dtype=ember.float64)
    grads = [m.grad.numpy().copy() for m in mixed]
    total = nn.utils.clip_grad_norm_(mixed, 0.1)
    np.testing.assert_allclose(total.item(), _np_total_norm(grads, 2.0), rtol=1e-6)
    assert mixed[0].grad.dtype == ember.float32 and mixed[1].grad.dtype == ember.float64
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        nn.utils.clip_grad_norm(mixed, 1.0)


def test_clip_does_not_record_autograd_and_keeps_grad_identity():
    p = _params_with_grads([(3,)])[0]
    g = p.grad
    nn.utils.clip_grad_norm_([p], 0.1)
    assert p.grad is g and g.grad_fn is None and not g.requires_grad


def test_get_total_norm_and_clip_grads_with_norm():
    ps = _params_with_grads([(3, 3), (4,)])
    grads = [p.grad for p in ps]
    total = nn.utils.get_total_norm(grads, norm_type=1.0)
    np.testing.assert_allclose(total.item(), _np_total_norm([g.numpy() for g in grads], 1.0), rtol=1e-6)
    before = [g.numpy().copy() for g in grads]
    nn.utils.clip_grads_with_norm_(ps, 1.0, total)
    for g, b in zip(grads, before):
        np.testing.assert_allclose(g.numpy(), b * (1.0 / (total.item() + 1e-6)), rtol=1e-5)
    assert nn.utils.get_total_norm([]).item() == 0.0


def test_clip_grad_value():
    ps = _params_with_grads([(10,), (3, 3)])
    before = [p.grad.numpy().copy() for p in ps]
    nn.utils.clip_grad_value_(ps, 0.5)
    for p, b in zip(ps, before):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(b, -0.5, 0.5))
    single = _params_with_grads([(4,)])[0]
    nn.utils.clip_grad_value_(single, 0.1)
    assert np.abs(single.grad.numpy()).max() <= 0.1


# ---- parameters <-> vector -------------------------------------------------------------

def test_parameters_to_vector_round_trip():
    m = nn.Sequential(Lin(3, 2), Lin(2, 4))
    vec = nn.utils.parameters_to_vector(m.parameters())
    expected = np.concatenate([p.detach().numpy().reshape(-1) for p in m.parameters()])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    assert vec.shape == (sum(p.numel() for p in m.parameters()),)
    new = ember.arange(vec.numel(), dtype=ember.float64)
    ids = [id(p) for p in m.parameters()]
    nn.utils.vector_to_parameters(new, m.parameters())
    assert [id(p) for p in m.parameters()] == ids
    np.testing.assert_array_equal(nn.utils.parameters_to_vector(m.parameters()).detach().numpy(), new.numpy())
    assert m[0].weight.shape == (2, 3) and m[0].weight[1, 0].item() == 3.0
    # the gradient flows through parameters_to_vector
    v = nn.utils.parameters_to_vector(m.parameters())
    (v * 2).sum().backward()
    np.testing.assert_array_equal(m[1].bias.grad.numpy(), [2.0] * 4)
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


# ---- parametrize ----------------------------------------------------------------------

class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x * self.c

    def right_inverse(self, y):
        return y / self.c


class NoInverse(nn.Module):
    def forward(self, x):
        return x * 2


def test_register_parametrization_basics():
    m = Lin(3, 3)
    w = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLin" and parametrize.type_before_parametrizations(m) is Lin
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is w  # identity kept, so optimizers keep working
    a = m.weight.detach().numpy()
    np.testing.assert_array_equal(a, a.T)
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert repr(m) == ("ParametrizedLin(\n"
                       "  (parametrizations): ModuleDict(\n"
                       "    (weight): ParametrizationList(\n"
                       "      (0): Symmetric()\n"
                       "    )\n"
                       "  )\n"
                       ")")
    # setting the property runs right_inverse
    s = ember.tensor([[1.0, 2.0, 3.0], [2.0, 5.0, 6.0], [3.0, 6.0, 9.0]], dtype=ember.float64)
    m.weight = s
    np.testing.assert_array_equal(m.weight.detach().numpy(), s.numpy())
    np.testing.assert_array_equal(m.parametrizations.weight.original.detach().numpy(), np.triu(s.numpy()))
    # plain class attributes unaffected for other instances
    assert not hasattr(Lin, "weight") and not parametrize.is_parametrized(Lin(2, 2))


def test_parametrization_gradients():
    m = Lin(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    x = ember.randn(4, 3, dtype=ember.float64)
    m(x).sum().backward()
    g = m.parametrizations.weight.original.grad.numpy()
    gw = np.ones((4, 3)).T @ x.numpy()  # dL/dW for L = sum(x W^T)
    gw = gw.T
    np.testing.assert_allclose(g, np.triu(gw) + np.triu(gw.T, 1), rtol=1e-12)

    def f(orig):
        return Symmetric()(orig)
    assert gradcheck(f, (ember.randn(3, 3, dtype=ember.float64, requires_grad=True),))


def test_chained_and_cached_parametrizations():
    m = Lin(2, 2)
    w0 = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", Scale(2.0))
    parametrize.register_parametrization(m, "weight", Scale(3.0))
    assert len(m.parametrizations.weight) == 2
    # the second registration does not touch `original` (as torch): Scale3(Scale2(w0 / 2))
    np.testing.assert_allclose(m.weight.detach().numpy(), 3 * w0, rtol=1e-12)
    with parametrize.cached():
        a = m.weight
        b = m.weight
        assert a is b
    assert m.weight is not m.weight
    m.weight = ember.ones(2, 2, dtype=ember.float64)
    np.testing.assert_allclose(m.parametrizations.weight.original.detach().numpy(), np.full((2, 2), 1 / 6))


def test_parametrization_errors():
    m = Lin(3, 2)

    class ChangesShape(nn.Module):
        def forward(self, x):
            return x[0]

    with pytest.raises(ValueError, match="Registering a parametrization may not change the shape of the tensor"):
        parametrize.register_parametrization(m, "weight", ChangesShape())
    assert not parametrize.is_parametrized(m)

    class ChangesDtype(nn.Module):
        def forward(self, x):
            return x.float()

    with pytest.raises(ValueError, match="may not change the dtype"):
        parametrize.register_parametrization(m, "weight", ChangesDtype())
    parametrize.register_parametrization(m, "weight", ChangesShape(), unsafe=True)
    assert m.weight.shape == (3,)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name 'nope'"):
        parametrize.register_parametrization(m, "nope", Scale(1.0))
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        parametrize.remove_parametrizations(m, "bias")
    m2 = Lin(2, 2)
    parametrize.register_parametrization(m2, "weight", NoInverse())
    with pytest.raises(RuntimeError, match="parametrization NoInverse does not implement right_inverse"):
        m2.weight = ember.zeros(2, 2, dtype=ember.float64)


def test_remove_parametrizations():
    m = Lin(2, 2)
    w = m.weight
    w0 = w.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", NoInverse())
    parametrize.remove_parametrizations(m, "weight")  # leave_parametrized=True
    assert type(m) is Lin and not hasattr(m, "parametrizations")
    assert m.weight is w and type(m.weight) is nn.Parameter
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w0)
    parametrize.register_parametrization(m, "weight", NoInverse())
    parametrize.register_parametrization(m, "bias", NoInverse())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m).__name__ == "ParametrizedLin"  # bias still parametrized
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w0)
    parametrize.remove_parametrizations(m, "bias")
    assert type(m) is Lin


def test_parametrized_module_copy_and_pickle():
    m = Lin(2, 2)
    parametrize.register_parametrization(m, "weight", Scale(2.0))
    c = copy.deepcopy(m)
    np.testing.assert_allclose(c.weight.detach().numpy(), m.weight.detach().numpy())
    assert c.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through state_dict"):
        pickle.dumps(m)
    fresh = Lin(2, 2)
    parametrize.register_parametrization(fresh, "weight", Scale(2.0))
    fresh.load_state_dict(m.state_dict())
    np.testing.assert_allclose(fresh.weight.detach().numpy(), m.weight.detach().numpy())


def test_parametrize_buffer():
    m = nn.Module()
    m.register_buffer("b", ember.ones(3, dtype=ember.float64))
    parametrize.register_parametrization(m, "b", Scale(2.0))
    assert list(m.state_dict()) == ["parametrizations.b.original"]
    assert [n for n, _ in m.named_buffers()] == ["parametrizations.b.original"]
    np.testing.assert_allclose(m.b.numpy(), [1.0, 1.0, 1.0])


# ---- weight_norm ------------------------------------------------------------------------

def test_norm_except_dim():
    v = ember.randn(3, 4, 5, dtype=ember.float64)
    a = v.numpy()
    np.testing.assert_allclose(norm_except_dim(v, 2, 0).numpy(),
                               np.sqrt((a ** 2).sum(axis=(1, 2), keepdims=True)))
    np.testing.assert_allclose(norm_except_dim(v, 2, 1).numpy(),
                               np.sqrt((a ** 2).sum(axis=(0, 2), keepdims=True)))
    np.testing.assert_allclose(norm_except_dim(v, 2, 2).numpy(),
                               np.sqrt((a ** 2).sum(axis=(0, 1), keepdims=True)))
    assert norm_except_dim(v, 2, -1).dim() == 0
    np.testing.assert_allclose(norm_except_dim(v, 2, -1).item(), np.sqrt((a ** 2).sum()))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    m = Lin(3, 4)
    w0 = m.weight.detach().numpy().copy()
    P.weight_norm(m, dim=dim)
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original0",
                                                     "parametrizations.weight.original1"]
    g = m.parametrizations.weight.original0
    v = m.parametrizations.weight.original1
    expected_g_shape = {0: (4, 1), 1: (1, 3), None: ()}[dim]
    assert tuple(g.shape) == expected_g_shape and v.shape == (4, 3)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-12)
    with ember.no_grad():
        g.mul_(2.0)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w0, rtol=1e-12)
    x = ember.randn(5, 3, dtype=ember.float64)
    m(x).sum().backward()
    assert g.grad is not None and v.grad is not None

    d = -1 if dim is None else dim

    def f(gg, vv):
        return _weight_norm(vv, gg, d)
    gg = g.detach().clone().requires_grad_()
    vv = v.detach().clone().requires_grad_()
    assert gradcheck(f, (gg, vv))
    assert gradgradcheck(f, (gg, vv))


def test_weight_norm_loads_legacy_state_dict():
    legacy = Lin(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(legacy)
    sd = legacy.state_dict()
    assert set(sd) == {"bias", "weight_g", "weight_v"}
    new = P.weight_norm(Lin(3, 2))
    assert repr(new.load_state_dict(sd)) == "<All keys matched successfully>"
    x = ember.randn(2, 3, dtype=ember.float64)
    np.testing.assert_allclose(new(x).detach().numpy(), legacy(x).detach().numpy(), rtol=1e-12)


def test_legacy_weight_norm():
    m = Lin(3, 4)
    w0 = m.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning, match="ember.nn.utils.weight_norm is deprecated"):
        nn.utils.weight_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert m.weight_g.shape == (4, 1)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-12)
    with ember.no_grad():
        m.weight_g.mul_(3.0)
    x = ember.randn(2, 3, dtype=ember.float64)
    y = m(x)  # the pre-hook recomputes weight
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ (3 * w0).T + m.bias.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), 3 * w0, rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)


# ---- spectral_norm ----------------------------------------------------------------------

def _sigma(a):
    return np.linalg.svd(a.reshape(a.shape[0], -1), compute_uv=False)[0]


def test_spectral_norm_parametrization():
    m = Lin(5, 4)
    w = m.weight.detach().numpy().copy()
    P.spectral_norm(m, n_power_iterations=5)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    u_buf = m.parametrizations.weight[0]._u
    for _ in range(20):
        wn = m.weight.detach().numpy()
    np.testing.assert_allclose(wn, w / _sigma(w), rtol=1e-6)
    assert abs(_sigma(wn) - 1.0) < 1e-6
    assert m.parametrizations.weight[0]._u is u_buf  # updated in place
    # eval mode: no power iteration, u unchanged
    m.eval()
    u0 = u_buf.numpy().copy()
    _ = m.weight
    np.testing.assert_array_equal(u_buf.numpy(), u0)
    # gradient w.r.t. the original weight (u, v fixed in eval mode)
    sn = m.parametrizations.weight[0]
    x0 = m.parametrizations.weight.original.detach().clone().requires_grad_()
    assert gradcheck(lambda t: sn(t), (x0,))
    x = ember.randn(3, 5, dtype=ember.float64)
    m(x).sum().backward()
    assert m.parametrizations.weight.original.grad is not None


def test_spectral_norm_dims_and_errors():
    conv = nn.Module()
    conv.weight = nn.Parameter(ember.randn(4, 3, 2, 2, dtype=ember.float64))
    w = conv.weight.detach().numpy().copy()
    P.spectral_norm(conv, n_power_iterations=30)
    np.testing.assert_allclose(conv.weight.detach().numpy(), w / _sigma(w), rtol=1e-5)

    class ConvTranspose2d(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(ember.randn(3, 4, 2, 2, dtype=ember.float64))

    ct = ConvTranspose2d()
    w = ct.weight.detach().numpy().copy()
    P.spectral_norm(ct, n_power_iterations=30)  # dim=1 for transposed convs
    assert ct.parametrizations.weight[0].dim == 1
    np.testing.assert_allclose(ct.weight.detach().numpy(), w / _sigma(np.moveaxis(w, 1, 0)), rtol=1e-5)

    vec = nn.Module()
    vec.weight = nn.Parameter(ember.tensor([3.0, 4.0], dtype=ember.float64))
    P.spectral_norm(vec)
    np.testing.assert_allclose(vec.weight.detach().numpy(), [0.6, 0.8])
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        P.spectral_norm(Lin(2, 2), dim=2)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        P.spectral_norm(Lin(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        P.spectral_norm(Lin(2, 2), name="nope")


def test_legacy_spectral_norm():
    m = Lin(5, 4)
    w = m.weight.detach().numpy().copy()
    nn.utils.spectral_norm(m, n_power_iterations=3)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_u", "weight_v"]
    sd = m.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    x = ember.randn(2, 5, dtype=ember.float64)
    for _ in range(30):
        y = m(x)
    np.testing.assert_allclose(m.weight.detach().numpy(), w / _sigma(w), rtol=1e-6)
    y.sum().backward()
    assert m.weight_orig.grad is not None
    other = nn.utils.spectral_norm(Lin(5, 4))
    assert repr(other.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert list(m._buffers) == [] and not m._state_dict_hooks and not m._load_state_dict_pre_hooks
    np.testing.assert_allclose(m.weight.detach().numpy(), w / _sigma(w), rtol=1e-6)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(m)


# ---- orthogonal ------------------------------------------------------------------------

def test_householder_product_composite():
    from ember.nn.utils.parametrizations import _householder_product
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3))
    tau = rng.uniform(0.5, 1.5, 3)
    q = np.eye(5)
    for i in range(3):
        v = np.zeros(5)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(5) - tau[i] * np.outer(v, v))
    np.testing.assert_allclose(_householder_product(ember.tensor(a), ember.tensor(tau)).numpy(), q[:, :3],
                               rtol=1e-13, atol=1e-14)
    at = ember.tensor(a, requires_grad=True)
    tt = ember.tensor(tau, requires_grad=True)
    assert gradcheck(_householder_product, (at, tt))


def _orth_err(w):
    r, c = w.shape[-2:]
    return (np.abs(w @ np.swapaxes(w, -1, -2) - np.eye(r)).max() if r <= c
            else np.abs(np.swapaxes(w, -1, -2) @ w - np.eye(c)).max())


def _positive_qr_q(w):
    q, r = np.linalg.qr(w)
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_parametrization(shape, orthogonal_map, use_trivialization):
    m = Lin(shape[1], shape[0])
    w0 = m.weight.detach().numpy().copy()
    P.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    w = m.weight.detach().numpy()
    assert w.shape == shape and _orth_err(w) < 1e-12
    keys = ["bias", "parametrizations.weight.original"] + (["parametrizations.weight.0.base"]
                                                           if use_trivialization else [])
    assert list(m.state_dict()) == keys
    resolved = orthogonal_map or ("matrix_exp" if shape[0] == shape[1] else "householder")
    if use_trivialization or resolved == "householder":
        # the orthogonal factor of the initial weight (R with a positive diagonal)
        ref = _positive_qr_q(w0) if shape[0] >= shape[1] else _positive_qr_q(w0.T).T
        np.testing.assert_allclose(w, ref, atol=1e-12)
    # gradients reach the unconstrained tensor, and a gradient step keeps it orthogonal
    x = ember.randn(5, shape[1], dtype=ember.float64)
    (m(x) ** 2).sum().backward()
    orig = m.parametrizations.weight.original
    assert orig.grad is not None and np.isfinite(orig.grad.numpy()).all()
    with ember.no_grad():
        orig.sub_(0.1 * orig.grad)
    assert _orth_err(m.weight.detach().numpy()) < 1e-12


def test_orthogonal_gradcheck_and_assign():
    m = Lin(3, 3)
    P.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    f = m.parametrizations.weight[0]
    x = m.parametrizations.weight.original.detach()
    d = x.triu()  # the diagonal holds signs (+-1): constant, not perturbed
    lower = x.tril(-1).clone().requires_grad_()
    assert gradcheck(lambda t: f(t.tril(-1) + d), (lower,))
    m2 = Lin(4, 4)
    P.orthogonal(m2)
    f2 = m2.parametrizations.weight[0]
    y = ember.randn(4, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(f2, (y,))
    # assigning an orthogonal matrix resets the trivialization's base
    q = _positive_qr_q(np.random.default_rng(3).standard_normal((4, 4)))
    m2.weight = ember.tensor(q)
    np.testing.assert_allclose(m2.weight.detach().numpy(), q, atol=1e-12)
    np.testing.assert_allclose(m2.parametrizations.weight[0].base.numpy(), q, atol=1e-15)


def test_orthogonal_batched_and_errors():
    mod = nn.Module()
    mod.weight = nn.Parameter(ember.randn(2, 5, 3, dtype=ember.float64))
    P.orthogonal(mod)
    w = mod.weight.detach().numpy()
    for i in range(2):
        assert _orth_err(w[i]) < 1e-12
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        vec = nn.Module()
        vec.w = nn.Parameter(ember.randn(3))
        P.orthogonal(vec, "w")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr'):
        P.orthogonal(Lin(2, 2), orthogonal_map="qr")
    cay = P.orthogonal(Lin(3, 3), orthogonal_map="cayley")  # (I + A/2)(I - A/2)^-1
    assert _orth_err(cay.weight.detach().numpy()) < 1e-12
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        P.orthogonal(Lin(2, 2), name="nope")
    m = Lin(3, 3)
    P.orthogonal(m, orthogonal_map="matrix_exp", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign to the matrix exponential"):
        m.weight = ember.eye(3, dtype=ember.float64)


# ---- differential check against PyTorch ---------------------------------------------------

_SCENARIO = r'''
import sys
import warnings
if sys.argv[1] == "torch":
    import torch as T
    import torch.nn as nn
else:
    sys.path.insert(0, sys.argv[2])
    import ember as T
    import ember.nn as nn
from collections import OrderedDict
P = nn.utils.parametrizations
parametrize = nn.utils.parametrize
warnings.simplefilter("ignore", FutureWarning)


class Lin(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(T.arange(i * o, dtype=T.float64).reshape(o, i) / 7 - 1)
        self.bias = nn.Parameter(T.zeros(o, dtype=T.float64))

    def forward(self, x):
        return x @ self.weight.T + self.bias

    def extra_repr(self):
        return "lin"


def r(t, n=6):
    return [round(v, n) for v in t.detach().reshape(-1).tolist()]


m = P.weight_norm(Lin(3, 2))
print(m)
print(list(m.state_dict()), [tuple(v.shape) for v in m.state_dict().values()])
print(r(m.weight))
m = P.weight_norm(Lin(3, 2), dim=None)
print([tuple(v.shape) for v in m.state_dict().values()])
m = P.weight_norm(Lin(3, 2), dim=1)
print([tuple(v.shape) for v in m.state_dict().values()])
m = P.spectral_norm(Lin(3, 2))
print(list(m.state_dict()), m.parametrizations.weight[0].dim)
m = P.orthogonal(Lin(3, 2))
print(list(m.state_dict()), type(m.parametrizations.weight[0]).__name__)
m = P.orthogonal(Lin(3, 3), use_trivialization=False)
print(list(m.state_dict()))
old = nn.utils.weight_norm(Lin(3, 2))
print(list(old.state_dict()), [tuple(v.shape) for v in old.state_dict().values()], r(old.weight))
old = nn.utils.spectral_norm(Lin(3, 2))
sd = old.state_dict()
print(list(sd), sd._metadata)
nn.utils.remove_spectral_norm(old)
print(list(old.state_dict()))


class Sq(nn.Module):
    def forward(self, x):
        return x * x


m = Lin(2, 2)
parametrize.register_parametrization(m, "weight", Sq())
parametrize.register_parametrization(m, "bias", Sq())
print(type(m).__name__, parametrize.type_before_parametrizations(m).__name__, parametrize.is_parametrized(m, "bias"))
print(m)
print(r(m.weight))
parametrize.remove_parametrizations(m, "weight")
print(type(m).__name__, list(m.state_dict()), r(m.weight))
parametrize.remove_parametrizations(m, "bias", leave_parametrized=False)
print(type(m).__name__, list(m.state_dict()))
try:
    parametrize.remove_parametrizations(m, "bias")
except Exception as e:
    print(type(e).__name__, str(e))

ps = [nn.Parameter(T.arange(6, dtype=T.float64).reshape(2, 3) - 2), nn.Parameter(T.ones(4, dtype=T.float64))]
for p in ps:
    p.grad = p.detach() * 3
for nt in (2.0, 1, float("inf"), 0.5):
    for p in ps:
        p.grad = p.detach() * 3
    tn = nn.utils.clip_grad_norm_(ps, 2.0, norm_type=nt)
    print(nt, round(tn.item(), 6), tn.dtype, r(ps[0].grad), r(ps[1].grad))
nn.utils.clip_grad_value_(ps, 0.1)
print(r(ps[0].grad))
v = nn.utils.parameters_to_vector(ps)
print(r(v))
nn.utils.vector_to_parameters(v * 2, ps)
print(r(ps[0]), r(ps[1]))
init = nn.init
for nl in ("linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
    print(nl, round(init.calculate_gain(nl), 8))
print(round(init.calculate_gain("leaky_relu", 0.3), 8))
print(init._calculate_fan_in_and_fan_out(T.empty(5, 4, 3, 2)))
w = T.empty(3, 4)
print(r(init.eye_(w)), r(init.dirac_(T.empty(2, 2, 3))), r(init.constant_(w, 0.5)))
try:
    init.kaiming_normal_(T.empty(3), mode="x")
except Exception as e:
    print(type(e).__name__, str(e))
try:
    init.kaiming_normal_(T.empty(3, 3), mode="x")
except Exception as e:
    print(type(e).__name__, str(e))
'''


def test_same_behaviour_as_torch(tmp_path):
    """parametrizations' layouts and reprs, legacy hooks, clipping, vector conversion and
    init's deterministic parts under PyTorch and ember: identical outputs."""
    import os
    import subprocess
    import sys
    if TORCH_PY is None:
        pytest.skip("PyTorch not installed")
    script = tmp_path / "scenario.py"
    script.write_text(_SCENARIO)
    try:
        ref = subprocess.run([TORCH_PY, str(script), "torch"], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("PyTorch too slow to start")
    if ref.returncode != 0:
        pytest.skip("PyTorch failed to run the scenario")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    mine = subprocess.run([sys.executable, str(script), "ember", pkg], capture_output=True, text=True, timeout=300)
    assert mine.returncode == 0, mine.stderr
    assert (mine.stdout + mine.stderr).replace("ember.", "torch.") == ref.stdout + ref.stderr
