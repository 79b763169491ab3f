"""The vectorized float exp / expm1 / tanh / sigmoid of the CPU elementwise kernels
(Note [Vectorized float transcendentals]) and the activations built on them, against
float64 NumPy, in ulps, over the whole float range including the edges."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _sweep():
    rng = np.random.default_rng(0)
    parts = [
        np.linspace(-110, 95, 200_001),          # through the subnormal and overflow edges
        rng.standard_normal(100_000) * 3,
        np.linspace(-1.5, 1.5, 30_001),          # expm1's and tanh's switch points
        np.array([0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.625, -0.625, 1.0, -1.0,
                  -87.3365478515625, -87.34, -103.9, -104.0, 88.37, 88.38]),
    ]
    return np.concatenate(parts).astype(np.float32)


def _ulps(got, want64, floor):
    """|got - want| in units of the float32 spacing at want, at least `floor`."""
    want = want64.astype(np.float32)
    spacing = np.spacing(np.abs(want)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(floor))
    both_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    err = np.abs(got.astype(np.float64) - want64) / spacing
    return np.where(both_inf, 0.0, err)


def _sigmoid64(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                    np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


SUBNORMAL = np.finfo(np.float32).smallest_subnormal
# exp and expm1 are exact to a few ulps down into the subnormals. sigmoid is 1 / (1 + exp(-x)),
# as PyTorch's: below -88.7 exp(-x) overflows and the result is 0 where the true one is a
# subnormal, so its error there is counted against the smallest normal float.
CASES = {
    "exp": (lambda t: t.exp(), np.exp, 3, SUBNORMAL),
    "expm1": (lambda t: t.expm1(), np.expm1, 3, SUBNORMAL),
    "tanh": (lambda t: t.tanh(), np.tanh, 4, SUBNORMAL),
    "sigmoid": (lambda t: t.sigmoid(), _sigmoid64, 4, np.finfo(np.float32).tiny),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_within_ulps_of_float64(name):
    op, ref, max_ulps, floor = CASES[name]
    x = _sweep()
    with np.errstate(over="ignore"):
        want = ref(x.astype(np.float64))
    got = op(ember.from_numpy(x)).numpy()
    err = _ulps(got, want, floor)
    worst = int(np.argmax(err))
    assert err[worst] <= max_ulps, (name, float(x[worst]), float(got[worst]), float(want[worst]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_specials(name):
    op, ref, _, _ = CASES[name]
    x = np.array([np.nan, np.inf, -np.inf], dtype=np.float32)
    got = op(ember.from_numpy(x)).numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_exp_subnormal_results():
    x = np.array([-88.0, -90.0, -95.0, -100.0, -103.0, -103.97, -104.5, -200.0], np.float32)
    got = ember.from_numpy(x).exp().numpy()
    want = np.exp(x.astype(np.float64)).astype(np.float32)  # rounded to the subnormal grid
    assert (got[:-2] > 0).all() and got[-2] == 0 and got[-1] == 0
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2 * SUBNORMAL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_and_half_paths_agree(name):
    op = CASES[name][0]
    xn = np.linspace(-6, 6, 4001).astype(np.float32)
    x = ember.from_numpy(xn)
    contiguous = op(x).numpy()
    strided_in = ember.from_numpy(np.repeat(xn, 2))[::2]  # the same values at stride 2
    assert strided_in.stride() == (2,)
    strided = op(strided_in).numpy()  # the strided loop: libm, not the vectorized math
    np.testing.assert_allclose(strided, contiguous, rtol=5e-7, atol=1e-30)
    for dt in (ember.float16, ember.bfloat16):
        low = op(x.to(dt)).float().numpy()
        ref = op(x.to(dt).float()).numpy()  # the same math in float, rounded once
        tol = 1e-3 if dt == ember.float16 else 8e-3
        np.testing.assert_allclose(low, ref, rtol=tol, atol=1e-6)


def test_activations_on_the_vectorized_math():
    x64 = np.linspace(-30, 30, 60_001)
    x = ember.from_numpy(x64.astype(np.float32))
    from math import erf
    gelu = 0.5 * x64 * (1 + np.vectorize(erf)(x64 / np.sqrt(2)))
    np.testing.assert_allclose(F.gelu(x).numpy(), gelu, rtol=2e-6, atol=3e-7)
    elu = np.where(x64 > 0, x64, np.expm1(x64))
    np.testing.assert_allclose(F.elu(x).numpy(), elu, rtol=3e-7, atol=1e-7)
    assert np.isnan(F.elu(ember.tensor([float("nan")])).item())
    assert np.isnan(F.gelu(ember.tensor([float("nan")])).item())
    # gelu's derivative cdf(x) + x pdf(x), in float on the shared Gaussian, and the specials
    # as PyTorch gives them (-inf and the derivative at +-inf are 0 * inf: NaN)
    xg = x.clone().requires_grad_()
    F.gelu(xg).backward(ember.ones_like(xg))
    cdf = 0.5 * (1 + np.vectorize(erf)(x64 / np.sqrt(2)))
    want = cdf + x64 * np.exp(-0.5 * x64 * x64) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(xg.grad.numpy(), want, rtol=2e-6, atol=4e-7)
    sp = ember.tensor([float("inf"), float("-inf"), float("nan"), 0.0], requires_grad=True)
    out = F.gelu(sp)
    assert out[0].item() == float("inf") and np.isnan(out[1].item()) and np.isnan(out[2].item())
    assert out[3].item() == 0.0
    out.backward(ember.ones(4))
    assert np.isnan(sp.grad[:3].numpy()).all() and sp.grad[3].item() == 0.5
