"""torch.lerp as one kernel (fn::Lerp through lerp_stub): PyTorch's two-sided formula in
opmath (float for float16/bfloat16), exact at weight 0 and 1; the function, method, in-place
and out= forms; broadcasting, strided and aliasing operands; autograd through the in-place
form; PyTorch's errors."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck


def lerp_ref(a, b, w):
    """PyTorch's formula in float64."""
    a, b, w = (np.asarray(v, dtype=np.float64) for v in (a, b, w))
    d = b - a
    return np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w))


def t(a, device, dtype=ember.float32):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_lerp_matches_the_formula(device, dtype):
    rng = np.random.default_rng(0)
    dt = getattr(ember, dtype)
    a, b = rng.standard_normal((37, 29)), rng.standard_normal((37, 29))
    w = rng.uniform(-1.5, 2.5, (37, 29))
    ea, eb, ew = (t(v, device, dt) for v in (a, b, w))
    # the reference takes the values the low-precision tensors hold
    ra, rb, rw = (v.double().cpu().numpy() for v in (ea, eb, ew))
    tol = {"float32": 1e-6, "float64": 1e-14, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    for weight, ref_w in ((ew, rw), (0.3, 0.3), (0.7, 0.7), (-0.25, -0.25)):
        got = ember.lerp(ea, eb, weight)
        assert got.dtype == dt and got.shape == (37, 29)
        ref = lerp_ref(ra, rb, ref_w)
        np.testing.assert_allclose(got.double().cpu().numpy(), ref, rtol=tol, atol=tol * 4)


def test_lerp_is_exact_at_both_ends(device):
    rng = np.random.default_rng(1)
    a, b = (t(rng.standard_normal(1000) * 1e3, device) for _ in range(2))
    np.testing.assert_array_equal(ember.lerp(a, b, 0.0).cpu().numpy(), a.cpu().numpy())
    np.testing.assert_array_equal(ember.lerp(a, b, 1.0).cpu().numpy(), b.cpu().numpy())
    w = t(np.r_[np.zeros(500), np.ones(500)], device)
    np.testing.assert_array_equal(ember.lerp(a, b, w).cpu().numpy(),
                                  np.r_[a.cpu().numpy()[:500], b.cpu().numpy()[500:]])
    # a NaN weight gives NaN; an infinite end gives infinity below 0.5 and NaN from 0.5 on
    # (inf - inf * 0.5), as PyTorch's
    assert np.isnan(ember.lerp(a[:3], b[:3], float("nan")).cpu().numpy()).all()
    inf = t([np.inf], device)
    assert ember.lerp(t([1.0], device), inf, 0.25).item() == np.inf
    assert np.isnan(ember.lerp(t([1.0], device), inf, 0.5).item())


def test_lerp_shapes_and_layouts(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 6))
    b = rng.standard_normal((6,))
    w = rng.uniform(0, 1, (4, 1))
    got = ember.lerp(t(a, device), t(b, device), t(w, device))
    np.testing.assert_allclose(got.cpu().numpy(), lerp_ref(a, b, w), rtol=1e-6, atol=1e-6)
    # strided operands: a transposed start, a stepped end
    at = t(a.T.copy(), device).t()
    bs = t(np.repeat(a, 2, axis=1), device)[:, ::2]
    assert not at.is_contiguous() and not bs.is_contiguous()
    np.testing.assert_allclose(ember.lerp(at, bs, 0.6).cpu().numpy(), lerp_ref(a, a, 0.6),
                               rtol=1e-6, atol=1e-6)
    # 0-d and empty
    z = ember.lerp(t(1.0, device), t(3.0, device), t(0.25, device))
    assert z.shape == () and z.item() == 1.5
    assert ember.lerp(t(np.zeros((0, 3)), device), t(np.zeros((0, 3)), device), 0.5).shape == (0, 3)
    # a 0-d CPU weight with operands on another device
    w0 = ember.tensor(0.5)
    assert ember.lerp(t([2.0], device), t([4.0], device), w0).cpu().item() == 3.0


def test_lerp_out_and_in_place(device):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    out = ember.empty(0, device=device)
    r = ember.lerp(t(a, device), t(b, device), 0.2, out=out)
    assert r is out and out.shape == (5, 7)
    np.testing.assert_allclose(out.cpu().numpy(), lerp_ref(a, b, 0.2), rtol=1e-6, atol=1e-6)
    x = t(a, device)
    ptr, version = x.data_ptr(), x._version
    r = x.lerp_(t(b, device), 0.9)
    assert r is x and x.data_ptr() == ptr and x._version == version + 1
    np.testing.assert_allclose(x.cpu().numpy(), lerp_ref(a, b, 0.9), rtol=1e-6, atol=1e-6)
    # the same tensor as start and end: lerp(x, x, w) == x
    y = t(a, device)
    y.lerp_(y, 0.3)
    np.testing.assert_allclose(y.cpu().numpy(), a, rtol=1e-6)
    # in place on a strided view writes through to its base
    base = t(np.zeros((4, 4)), device)
    base[:, 1].lerp_(t(np.full(4, 8.0), device), 0.25)
    np.testing.assert_array_equal(base.cpu().numpy()[:, 1], np.full(4, 2.0))
    assert (base.cpu().numpy()[:, [0, 2, 3]] == 0).all()


def test_lerp_in_place_records_autograd(device):
    rng = np.random.default_rng(4)
    a = t(rng.standard_normal(5), device, ember.float64).requires_grad_()
    b = t(rng.standard_normal(5), device, ember.float64).requires_grad_()
    w = t(rng.uniform(0, 1, 5), device, ember.float64).requires_grad_()
    y = a * 1.0
    y.lerp_(b, w)
    assert type(y.grad_fn).__name__ == "LerpBackward1"
    y.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), 1 - w.detach().cpu().numpy())
    np.testing.assert_allclose(b.grad.cpu().numpy(), w.detach().cpu().numpy())
    np.testing.assert_allclose(w.grad.cpu().numpy(), (b - a).detach().cpu().numpy())
    assert gradcheck(lambda s, e, ww: (s * 1.0).lerp_(e, ww), (a, b, w))
    assert gradcheck(lambda s, e: (s * 1.0).lerp_(e, 0.7), (a, b))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        a.lerp_(b, 0.5)


def test_lerp_errors(device):
    f32 = t([1.0, 2.0, 3.0], device)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `weight` but got dtype float64"):
        ember.lerp(f32, f32, t([0.5, 0.5, 0.5], device, ember.float64))
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        ember.lerp(f32, t([1.0, 2.0, 3.0], device, ember.float64), 0.5)
    with pytest.raises(RuntimeError, match="expected a floating-point `start`"):
        ember.lerp(t([1, 2], device, ember.int64), t([1, 2], device, ember.int64), 0.5)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[2, 3\]"):
        f32.clone().lerp_(t(np.ones((2, 3)), device), 0.5)
    x = t(np.arange(6.0), device)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].lerp_(x[:-1], 0.5)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        t([1.0], device).expand(3).lerp_(f32, 0.5)
    with pytest.raises(TypeError):
        ember.lerp(f32, f32, "half")
