"""The op-layer and Python-library code that reads tensor data on the host, run on the device
against the CPU: GradScaler's `_amp_foreach_non_finite_check_and_unscale_` and
`_amp_update_scale_` (device tensors, no host copy), the argument checks of bernoulli_ / normal
(an on-device check, the elements copied only for the error), integer pow's negative-exponent
check, packed RNNs (batch_sizes read on the host), MultiheadAttention's bias_k / add_zero_attn
masks, gradcheck / jacobian on device inputs and the vision helpers that end in NumPy.

How these tests run on each device: device_compare.py.
"""
import numpy as np
import pytest
from device_compare import (
    FLOATS,
    as_numpy,
    assert_same,
    check,
    cmp_dev,
    make,
    seeded,
    skip_on_cpu,
    to_dev,
)

import ember
import ember.nn as nn
from ember import _C

pytestmark = pytest.mark.usefixtures("compare_device")


# ---- GradScaler ---------------------------------------------------------------------------------

def _unscale(grads, found, inv):
    _C._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    return list(grads) + [found]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", [False, True])
def test_unscale_contiguous(dtype, bad):
    rng = seeded("unscale", dtype, bad)
    grads = [make((37,), dtype, rng), make((5, 7), dtype, rng), make((), dtype, rng)]
    if bad:
        grads[1][2, 3] = float("inf")
    inv = ember.full((), 1.0 / 3000.0, dtype=ember.float32)  # not a power of two
    found = ember.zeros(())
    check(lambda g, f, i: _unscale([t.clone() for t in g], f.clone(), i), grads, found, inv,
          what=f"unscale {dtype}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_unscale_strided_and_nan(dtype):
    rng = seeded("unscale strided", dtype)
    g = make((6, 9), dtype, rng).t()  # non-contiguous
    g2 = make((4,), dtype, rng)
    g2[1] = float("nan")
    inv = ember.full((1,), 0.125, dtype=ember.float32)  # exact in every dtype
    found = ember.zeros((1,))
    out = check(lambda a, b, f, i: _unscale([a.clone().t().contiguous().t(), b.clone()], f.clone(), i),
                g, g2, found, inv, what=f"strided {dtype}")
    if out is not None:
        assert float(out[-1].item()) == 1.0


@pytest.mark.parametrize("found_v,tracker_v,interval,scale_v", [
    (0.0, 0, 3, 1024.0),          # count up
    (0.0, 2, 3, 1024.0),          # grow
    (1.0, 2, 3, 1024.0),          # back off, reset
    (0.0, 0, 1, 3.0e38),          # growth to inf is skipped, tracker reset
    (2.0, 1, 5, 65536.0),         # any nonzero found_inf backs off
])
@pytest.mark.parametrize("factors", [(2.0, 0.5), (1.7, 0.3)])
def test_update_scale(found_v, tracker_v, interval, scale_v, factors):
    def run(scale, tracker, found):
        scale, tracker = scale.clone(), tracker.clone()
        _C._amp_update_scale_(scale, tracker, found, factors[0], factors[1], interval)
        return [scale, tracker]
    scale = ember.full((), scale_v, dtype=ember.float32)
    tracker = ember.full((), tracker_v, dtype=ember.int32)
    found = ember.full((), found_v, dtype=ember.float32)
    expected = run(scale, tracker, found)
    actual = run(*to_dev([scale, tracker, found]))
    np.testing.assert_array_equal(as_numpy(actual[0]), as_numpy(expected[0]))  # bitwise
    np.testing.assert_array_equal(as_numpy(actual[1]), as_numpy(expected[1]))
    assert actual[0].device.type == ember.device(cmp_dev()).type


def test_update_scale_mixed_devices_raise():
    skip_on_cpu("mixes CPU and device tensors")
    with pytest.raises(RuntimeError):
        _C._amp_update_scale_(ember.ones((), device=cmp_dev()), ember.zeros((), dtype=ember.int32),
                              ember.zeros((), device=cmp_dev()), 2.0, 0.5, 3)


def test_grad_scaler_loop():
    def train(device):
        ember.manual_seed(0)
        model = nn.Linear(6, 3).to(device)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        scaler = ember.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
        rng = seeded("scaler loop")
        scales = []
        for step in range(6):
            x = make((4, 6), "float32", rng).to(device)
            opt.zero_grad()
            loss = model(x).square().sum()
            if step == 3:
                loss = loss * float("inf")
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        return scales, [p.detach() for p in model.parameters()]
    s_cpu, p_cpu = train("cpu")
    s_dev, p_dev = train(cmp_dev())
    assert s_cpu == s_dev
    assert_same(p_cpu, p_dev)


# ---- random argument checks ---------------------------------------------------------------------

@pytest.mark.parametrize("bad", [None, -0.5, 1.5, float("nan")])
def test_bernoulli_p_check(bad):
    p = ember.tensor([0.0, 1.0, 0.0, 1.0, 0.0], dtype=ember.float64)
    if bad is not None:
        p[2] = bad

    def draw(p):
        return ember.empty(5).bernoulli_(p)
    out = check(draw, p, what=f"bernoulli_ p={bad}")
    if bad is None:
        assert out.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("bad", [None, -1.0, float("nan")])
def test_normal_std_check(bad):
    mean = ember.tensor([1.0, -2.0, 3.0])
    std = ember.zeros(3)
    if bad is not None:
        std[1] = bad
    out = check(lambda m, s: ember.normal(m, s), mean, std, what=f"normal std={bad}")
    if bad is None:
        assert out.tolist() == [1.0, -2.0, 3.0]


def test_integer_pow_negative_exponent():
    x = ember.tensor([1, 2, 3])
    check(lambda a: a ** 2, x, what="int pow 2")
    check(lambda a: a ** -1, x, what="int pow -1")  # raises on both


# ---- nn -----------------------------------------------------------------------------------------

def test_packed_lstm():
    rng = seeded("packed lstm")
    ember.manual_seed(1)
    lstm = nn.LSTM(3, 4)
    x = make((5, 3, 3), "float32", rng)
    lengths = [5, 3, 2]

    def run(x, dev):
        m = lstm.to(dev)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths)
        out, (h, c) = m(packed)
        padded, lens = nn.utils.rnn.pad_packed_sequence(out)
        return [padded, h, c]
    expected = run(x, "cpu")
    actual = run(to_dev(x), cmp_dev())
    assert_same(expected, actual)


@pytest.mark.parametrize("add_zero_attn", [False, True])
def test_mha_bias_kv_masks(add_zero_attn):
    rng = seeded("mha", add_zero_attn)
    ember.manual_seed(2)
    mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=add_zero_attn)
    q = make((4, 2, 8), "float32", rng)
    attn_mask = ember.zeros(4, 4)
    kpm = ember.tensor([[False, False, False, True], [False, True, False, False]])

    def run(q, m, k, dev):
        out, w = mha.to(dev)(q, q, q, attn_mask=m, key_padding_mask=k)
        return [out, w]
    expected = run(q, attn_mask, kpm, "cpu")
    actual = run(*to_dev([q, attn_mask, kpm]), cmp_dev())
    assert_same(expected, actual, tol=(1e-4, 1e-5))


# ---- autograd helpers ---------------------------------------------------------------------------

@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_on_device(fast_mode):
    rng = seeded("gradcheck", fast_mode)
    x = make((3, 2), "float64", rng).to(cmp_dev()).requires_grad_()
    w = make((2, 2), "float64", rng).to(cmp_dev()).requires_grad_()
    assert ember.autograd.gradcheck(lambda a, b: (a @ b).sin(), (x, w), fast_mode=fast_mode)
    assert ember.autograd.gradgradcheck(lambda a, b: (a @ b).sin(), (x, w))


def test_jacobian_empty_output_device():
    x = make((3,), "float64", seeded("jac")).to(cmp_dev())
    j = ember.autograd.functional.jacobian(lambda a: a[:0] * 2, x)
    assert tuple(j.shape) == (0, 3)
    assert j.device.type == ember.device(cmp_dev()).type


# ---- vision -------------------------------------------------------------------------------------

def test_to_uint8_hwc():
    from ember.vision.utils import to_uint8_hwc
    img = make((3, 5, 4), "float32", seeded("uint8"), lo=-0.2, hi=1.2)
    np.testing.assert_array_equal(to_uint8_hwc(img.to(cmp_dev())), to_uint8_hwc(img))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "edge", "symmetric"])
def test_pad(mode):
    import ember.vision.transforms.functional as TF
    img = make((3, 5, 6), "float32", seeded("pad", mode))
    check(lambda x: TF.pad(x, [1, 2, 2, 1], fill=0.5, padding_mode=mode), img, what=mode)


def test_resize_antialias_and_rotate():
    import ember.vision.transforms.functional as TF
    img = make((3, 12, 10), "float32", seeded("resize"), lo=0.0, hi=1.0)
    check(lambda x: TF.resize(x, [5, 4], antialias=True), img, tol=(1e-5, 1e-6), what="resize")
    check(lambda x: TF.rotate(x, 30.0, interpolation="bilinear"), img, tol=(1e-5, 1e-6),
          what="rotate")


def test_to_pil_image():
    import ember.vision.transforms.functional as TF
    img = make((3, 4, 5), "float32", seeded("pil"), lo=0.0, hi=1.0)
    np.testing.assert_array_equal(np.asarray(TF.to_pil_image(img.to(cmp_dev()))),
                                  np.asarray(TF.to_pil_image(img)))
