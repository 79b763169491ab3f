"""Numerics of the torch surface beyond the registry's generic checks: special
functions at their edges, einsum forms, mode's gradient, reductions' odd shapes."""
import math

import numpy as np
import pytest

import ember


def _t(v, device, dtype=ember.float64):
    return ember.tensor(v, dtype=dtype, device=device)


def test_special_function_edges(device):
    x = _t([-1.0, 1.0, 0.0, 0.999999, -0.5, 2.0], device)
    e = ember.erfinv(x).tolist()
    assert e[0] == -math.inf and e[1] == math.inf and e[2] == 0.0 and math.isnan(e[5])
    assert abs(math.erf(e[3]) - 0.999999) < 1e-15 and abs(math.erf(e[4]) + 0.5) < 1e-15
    d = ember.digamma(_t([0.0, -1.0, -2.5, 1.0, 1e6], device)).tolist()
    assert d[0] == -math.inf and math.isnan(d[1])
    np.testing.assert_allclose(d[2:], [1.1031566406452432, -0.5772156649015329, 13.815510057964275], rtol=1e-12)
    np.testing.assert_allclose(ember.lgamma(_t([0.5, 100.0, -0.5], device)).tolist(),
                               [math.lgamma(0.5), math.lgamma(100.0), math.lgamma(-0.5)], rtol=1e-14)
    np.testing.assert_allclose(ember.i0(_t([0.0, 1.0, 14.9, 15.1, 50.0, -3.0], device)).numpy(),
                               np.i0([0.0, 1.0, 14.9, 15.1, 50.0, -3.0]), rtol=1e-13)
    np.testing.assert_allclose(ember.erfc(_t([10.0, -3.0], device)).tolist(), [math.erfc(10.0), math.erfc(-3.0)],
                               rtol=1e-14)
    # integer inputs compute in the default float dtype
    assert ember.lgamma(ember.tensor([3, 4], device=device)).dtype == ember.float32


def test_special_function_gradients(device):
    from ember.autograd import gradcheck, gradgradcheck
    x = _t([0.3, 1.7, 4.0], device).requires_grad_()
    for f in (ember.lgamma, ember.digamma, ember.erfc, ember.i0, ember.special_i1,
              lambda v: ember.erfinv(v / 5), lambda v: ember.polygamma(2, v), lambda v: ember.mvlgamma(v + 1, 2)):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))
    z = _t([0.0, 0.0], device).requires_grad_()
    ember.special_i1(z).sum().backward()
    assert z.grad.tolist() == [0.5, 0.5]


def test_einsum_forms(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 5))
    ta, tb = _t(a, device), _t(b, device)
    for eq, ops, nps in [("bij,jk->bik", (ta, tb), (a, b)), ("bij->", (ta,), (a,)), ("...j,jk", (ta, tb), (a, b)),
                         ("bij,jk->kb", (ta, tb), (a, b)), ("i...->...", (ta,), (a,))]:
        np.testing.assert_allclose(ember.einsum(eq, *ops).numpy(), np.einsum(eq, *nps), atol=1e-12)
    np.testing.assert_allclose(ember.einsum("ij,jk", [tb.t(), tb]).numpy(), b.T @ b, atol=1e-12)
    v = ember.einsum("ij->ji", ta[0])
    assert v.stride() == (1, 4)  # a view, like PyTorch's
    with pytest.raises(RuntimeError, match="output subscript"):
        ember.einsum("ij->k", ta[0])
    with pytest.raises(RuntimeError, match="more than once"):
        ember.einsum("ij->ii", ta[0])


def test_mode_gradient_and_ties(device):
    x = _t([[3.0, 1.0, 2.0, 1.0, 3.0]], device).requires_grad_()
    v, i = ember.mode(x, 1)
    assert v.tolist() == [1.0] and i.tolist() == [3]
    v.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0, 1.0, 0.0]]
    assert ember.mode(ember.tensor(5.0, device=device)).values.item() == 5.0


def test_reductions_odd_shapes(device):
    assert ember.nansum(ember.full((3,), float("nan"), device=device)).item() == 0.0
    assert math.isnan(ember.nanmean(ember.full((3,), float("nan"), device=device)).item())
    assert math.isnan(ember.nanmedian(ember.full((3,), float("nan"), device=device)).item())
    assert ember.diff(ember.zeros(0, device=device)).shape == (0,)
    assert ember.logcumsumexp(_t([-math.inf, -math.inf], device), 0).tolist() == [-math.inf, -math.inf]
    assert ember.cov(_t([[1.0, 2.0, 4.0]], device)).shape == ()
    q = ember.quantile(_t([[1.0, 2.0, 3.0, 4.0]], device), _t([0.25, 0.5], device), dim=1, keepdim=True)
    assert q.shape == (2, 1, 1)
    with pytest.raises(RuntimeError, match="non-empty"):
        ember.quantile(ember.zeros(0, dtype=ember.float64, device=device), 0.5)
    assert ember.histc(_t([1.0, 2.0, 1.0], device), bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 0.0]
    assert ember.aminmax(ember.tensor([[1, 2], [3, 4]], device=device), dim=0).max.tolist() == [3, 4]


def test_gcd_lcm_and_frexp(device):
    a = ember.tensor([0, 0, 12, -18, 7], device=device)
    b = ember.tensor([0, 5, 8, 12, -3], device=device)
    assert ember.gcd(a, b).tolist() == [0, 5, 4, 6, 1]
    assert ember.lcm(a, b).tolist() == [0, 0, 24, 36, 21]
    m, e = ember.frexp(_t([math.inf, -math.inf, 0.0, 2.0 ** -1030], device))
    assert m.tolist()[:3] == [math.inf, -math.inf, 0.0] and e.dtype == ember.int32
    assert abs(m.tolist()[3] * 2.0 ** e.tolist()[3] - 2.0 ** -1030) < 1e-320
