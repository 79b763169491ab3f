"""cdist: the direct p-norm kernel and the matrix-product (Euclidean) path, compute_mode's
choice between them, broadcast batches, empty inputs, PyTorch's gradients (zero distances
included), errors, and a side-by-side run against PyTorch in a subprocess when it is there."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember.autograd import gradcheck, gradgradcheck

MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
         "donot_use_mm_for_euclid_dist"]
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def ref(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == float("inf"):
        return d.max(-1) if d.shape[-1] else np.zeros(d.shape[:-1], a.dtype)
    return (d ** p).sum(-1) ** (1 / p)


def t(a, device, dtype=None, rg=False):
    return ember.tensor(a, dtype=dtype, device=device, requires_grad=rg)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("shape", [((5, 3), (4, 3)), ((2, 70, 7), (2, 64, 7)),
                                   ((3, 1, 9, 2), (4, 130, 2)), ((1, 1), (65, 1))],
                         ids=["small", "block", "broadcast", "m1"])
def test_forward_matches_numpy(p, shape, device):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=shape[0]), rng.normal(size=shape[1])
    a[..., 0, :] = b[..., 0, :] if a.ndim == b.ndim else a[..., 0, :]  # an exact zero distance
    exp = ref(a, b, p)
    for mode in MODES:
        got = ember.cdist(t(a, device), t(b, device), p, compute_mode=mode).cpu().numpy()
        assert got.shape == exp.shape
        np.testing.assert_allclose(got, exp, rtol=1e-10, atol=1e-6 if p == 2 else 1e-10)
        got32 = ember.cdist(t(a, device, ember.float32), t(b, device, ember.float32), p,
                            compute_mode=mode)
        assert got32.dtype == ember.float32
        np.testing.assert_allclose(got32.cpu().numpy(), exp, rtol=2e-5, atol=2e-3 if p == 2 else 1e-5)


@pytest.mark.parametrize("p", PS)
def test_nan_propagates(p, device):
    # As PyTorch 2.15: a NaN feature makes the row's distances NaN (p = 0 included), except
    # p = inf, whose running max skips it; an infinite feature gives inf, except on the
    # matrix-product path (inf - inf there: NaN).
    a = np.array([[np.nan, 1.0, 2.0], [0.0, 1.0, 2.0], [np.inf, 0.0, 0.0]])
    b = np.array([[0.0, 1.0, 5.0], [1.0, 1.0, 2.0]])
    for mode in MODES:
        got = ember.cdist(t(a, device), t(b, device), p, compute_mode=mode).cpu().numpy()
        if p == float("inf"):
            np.testing.assert_array_equal(got[0], [3.0, 0.0])
        else:
            assert np.isnan(got[0]).all(), (mode, got)
        np.testing.assert_allclose(got[1], ref(a[1:2], b, p)[0], rtol=1e-12)
        if p == 2 and mode == "use_mm_for_euclid_dist":  # 3 x 2: "if necessary" is direct
            assert np.isnan(got[2]).all(), (mode, got)
        else:
            np.testing.assert_array_equal(got[2], [p == 0 and 3.0 or np.inf] * 2)


def test_noncontiguous_and_threads(device):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 40, 3)).astype(np.float32)
    b = rng.normal(size=(3, 3, 33)).astype(np.float32)
    ta = t(a, device)[::2]                      # strided batch
    tb = t(b, device).transpose(1, 2)           # (3, 33, 3), features not contiguous
    exp = ref(a[::2], b.transpose(0, 2, 1), 1.0)
    old = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            outs.append(ember.cdist(ta, tb, 1.0).cpu().numpy())
            outs.append(ember.cdist(ta, tb).cpu().numpy())
    finally:
        ember.set_num_threads(old)
    np.testing.assert_allclose(outs[0], exp, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_array_equal(outs[1], outs[3])


def test_half_and_bfloat16_compute_in_float(device):
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(4, 30, 5)), rng.normal(size=(4, 7, 5))
    for dt in (ember.float16, ember.bfloat16):
        for p in (1.0, 2.0):
            r = ember.cdist(t(a, device, dt), t(b, device, dt), p)
            assert r.dtype == dt
            aa, bb = t(a, device, dt).double().cpu().numpy(), t(b, device, dt).double().cpu().numpy()
            np.testing.assert_allclose(r.double().cpu().numpy(), ref(aa, bb, p), rtol=2e-2, atol=2e-2)


def test_mode_selects_path(device):
    small = t(np.ones((3, 2)), device, rg=True), t(np.zeros((4, 2)), device, rg=True)
    big = t(np.ones((26, 2)), device, rg=True), t(np.zeros((4, 2)), device, rg=True)
    if device != "cpu":
        pytest.skip("the fused kernels and their node names are CPU-only")

    def name(x1, x2, **k):
        # PyTorch 2.15 views _euclidean_dist's result: ViewBackward0 -> EuclideanDistBackward0
        fn = ember.cdist(x1, x2, **k).grad_fn
        if type(fn).__name__ == "ViewBackward0":
            fn = fn.next_functions[0][0]
            assert type(fn).__name__ == "EuclideanDistBackward0"
            return "View(EuclideanDistBackward0)"
        return type(fn).__name__

    assert name(*small) == "CdistBackward0"
    assert name(*big) == "View(EuclideanDistBackward0)"
    assert name(*small, compute_mode="use_mm_for_euclid_dist") == "View(EuclideanDistBackward0)"
    assert name(*big, compute_mode="donot_use_mm_for_euclid_dist") == "CdistBackward0"
    assert name(*big, p=1.0) == "CdistBackward0"
    assert name(big[0][:0], big[1]) == "CdistBackward0"  # empty input: always the direct node


def test_empty_inputs(device):
    for s1, s2, out in [((0, 3), (4, 3), (0, 4)), ((2, 3), (0, 3), (2, 0)),
                        ((0, 2, 3), (1, 4, 3), (0, 2, 4))]:
        r = ember.cdist(ember.zeros(s1, device=device), ember.zeros(s2, device=device))
        assert tuple(r.shape) == out
    a = ember.ones(2, 0, dtype=ember.float64, device=device, requires_grad=True)
    b = ember.ones(3, 0, dtype=ember.float64, device=device, requires_grad=True)
    for p in (1.0, 2.0):
        r = ember.cdist(a, b, p, compute_mode="use_mm_for_euclid_dist")
        np.testing.assert_array_equal(r.detach().cpu().numpy(), np.zeros((2, 3)))
        r.sum().backward()
        assert tuple(a.grad.shape) == (2, 0) and tuple(b.grad.shape) == (3, 0)


@pytest.mark.parametrize("p", [0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_gradcheck_direct(p, device):
    rng = np.random.default_rng(3)
    a = t(rng.normal(size=(2, 3, 4)), device, rg=True)
    b = t(rng.normal(size=(5, 4)), device, rg=True)      # broadcast over a's batch
    f = lambda u, v: ember.cdist(u, v, p, compute_mode="donot_use_mm_for_euclid_dist")  # noqa: E731
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_gradcheck_mm_path(device):
    rng = np.random.default_rng(4)
    a = t(rng.normal(size=(3, 1, 4, 2)), device, rg=True)
    b = t(rng.normal(size=(2, 5, 2)), device, rg=True)
    f = lambda u, v: ember.cdist(u, v, compute_mode="use_mm_for_euclid_dist")  # noqa: E731
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_p0_has_zero_gradient(device):
    a = t(np.random.default_rng(5).normal(size=(3, 2)), device, rg=True)
    ember.cdist(a, a.detach() + 1, 0.0).sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), np.zeros((3, 2)))


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, float("inf")])
def test_zero_distance_gradient_is_zero(p, mode, device):
    # Equal rows: every difference and the distance are 0; PyTorch's subgradient is 0.
    z = ember.zeros(3, 2, dtype=ember.float64, device=device, requires_grad=True)
    ember.cdist(z, z, p, compute_mode=mode).sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), np.zeros((3, 2)))
    # One difference 0, the distance not: p < 1 drops that feature, p >= 1 keeps sign(d) = 0.
    x1 = ember.tensor([[0.0, 1.0], [1.0, 1.0]], dtype=ember.float64, device=device, requires_grad=True)
    x2 = ember.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=ember.float64, device=device)
    ember.cdist(x1, x2, p, compute_mode=mode).sum().backward()
    assert np.isfinite(x1.grad.cpu().numpy()).all()


def test_errors(device):
    a = ember.ones(3, 2, device=device)
    with pytest.raises(ValueError, match="bogus is not a valid value for compute_mode"):
        ember.cdist(a, a, compute_mode="bogus")
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X1 got: Long"):
        ember.cdist(ember.ones(3, 2, dtype=ember.int64, device=device), a)
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X2 got: Int"):
        ember.cdist(a, ember.ones(3, 2, dtype=ember.int32, device=device))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        ember.cdist(a, a, -1.0)
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        ember.cdist(ember.ones(2, device=device), a)
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 2 X2: 3"):
        ember.cdist(a, ember.ones(3, 3, device=device))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.cdist(a, a.double())
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        ember.cdist(ember.ones(2, 3, 2, device=device), ember.ones(3, 3, 2, device=device))


_SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np, torch
    cases = json.loads(sys.stdin.read())
    out = []
    for c in cases:
        a = torch.tensor(np.array(c["a"]), requires_grad=True)
        b = torch.tensor(np.array(c["b"]), requires_grad=True)
        r = torch.cdist(a, b, c["p"], compute_mode=c["mode"])
        r.backward(torch.tensor(np.array(c["g"])))
        out.append([r.tolist(), a.grad.tolist(), b.grad.tolist()])
    print(json.dumps(out))
""")


def test_matches_pytorch():
    if TORCH_PY is None:
        pytest.skip("no PyTorch interpreter")
    rng = np.random.default_rng(7)
    cases = []
    for p in [0.0, 0.5, 1.0, 2.0, 3.0, float("inf")]:
        for mode in MODES:
            a = rng.integers(-2, 3, size=(2, 28, 3)).astype(np.float64)  # ties and zero distances
            b = rng.integers(-2, 3, size=(1, 6, 3)).astype(np.float64)
            cases.append(dict(a=a.tolist(), b=b.tolist(), p=p, mode=mode,
                              g=rng.normal(size=(2, 28, 6)).tolist()))
    r = subprocess.run([TORCH_PY, "-c", _SCRIPT], input=json.dumps(cases), capture_output=True,
                       text=True, timeout=300)
    # PyTorch is present: its script failing is a test failure, not a reason to skip
    assert r.returncode == 0, f"PyTorch subprocess failed: {r.stderr[-300:]}"
    theirs = json.loads(r.stdout)
    for c, (tr, ga, gb) in zip(cases, theirs):
        a = ember.tensor(np.array(c["a"]), requires_grad=True)
        b = ember.tensor(np.array(c["b"]), requires_grad=True)
        res = ember.cdist(a, b, c["p"], compute_mode=c["mode"])
        res.backward(ember.tensor(np.array(c["g"])))
        what = f"p={c['p']} mode={c['mode']}"
        np.testing.assert_allclose(res.detach().numpy(), tr, atol=1e-6, err_msg=what)
        np.testing.assert_allclose(a.grad.numpy(), ga, atol=1e-6, err_msg=what)
        np.testing.assert_allclose(b.grad.numpy(), gb, atol=1e-6, err_msg=what)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
