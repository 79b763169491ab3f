"""Automatic mixed precision: ember.autocast's op policy (C++, ops/autocast.cpp) and
GradScaler's fused kernels, on the CPU with bfloat16 (and on CUDA where present)."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _dev_type(device):
    return "cuda" if str(device).startswith("cuda") else "cpu"


def _low(device):
    return ember.bfloat16 if _dev_type(device) == "cpu" else ember.float16


def test_state_queries_and_nesting():
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert ember.get_autocast_dtype("cuda") == ember.float16
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        assert ember.is_autocast_cpu_enabled()
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        assert ember.is_autocast_enabled("cpu")
    assert not ember.is_autocast_enabled("cpu")
    assert ember.amp.autocast is ember.autocast


def test_bad_arguments():
    with pytest.raises(ValueError, match="device_type"):
        ember.autocast(0)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        ember.autocast("tpu")
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        ac = ember.autocast("cpu", dtype=ember.float64)
    with ac:
        assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="not supported"):
        ember._C._autocast_set_dtype("cpu", ember.float32)


def test_exception_restores_state():
    with pytest.raises(ZeroDivisionError):
        with ember.autocast("cpu"):
            raise ZeroDivisionError
    assert not ember.is_autocast_enabled("cpu")
    assert ember._C._autocast_cache_size() == 0


def test_lower_precision_ops(device):
    dev, low = device, _low(device)
    a = ember.randn(4, 5, device=dev)
    b = ember.randn(5, 3, device=dev)
    bias = ember.randn(3, device=dev)
    x = ember.randn(2, 3, 8, 8, device=dev)
    w = ember.randn(4, 3, 3, 3, device=dev)
    q = ember.randn(2, 4, 6, 8, device=dev)
    with ember.autocast(_dev_type(dev)):
        assert ember.mm(a, b).dtype == low
        assert ember.matmul(a, b).dtype == low
        assert (a @ b).dtype == low
        assert ember.bmm(a[None], b[None]).dtype == low
        assert ember.addmm(bias, a, b).dtype == low
        assert F.linear(a, b.t(), bias).dtype == low
        assert F.conv2d(x, w, padding=1).dtype == low
        # Not in ember's list yet (no bfloat16 attention kernel): runs in float32.
        assert F.scaled_dot_product_attention(q, q, q).dtype == ember.float32
        # float64 is left alone.
        assert ember.mm(a.double(), b.double()).dtype == ember.float64
        # integers are left alone (and still fail the way they do outside autocast).
    ref = (a.numpy() if dev == "cpu" else a.cpu().numpy()) @ (b.numpy() if dev == "cpu" else b.cpu().numpy())
    with ember.autocast(_dev_type(dev)):
        got = ember.mm(a, b).float().cpu().numpy()
    np.testing.assert_allclose(got, ref, rtol=3e-2, atol=3e-2)
    # Outside the region: float32 again.
    assert ember.mm(a, b).dtype == ember.float32


def test_float32_ops(device):
    dev, low = device, _low(device)
    h = ember.randn(4, 6, device=dev).to(low)
    t = ember.randn(4, 6, device=dev).to(low)
    target = ember.randint(0, 6, (4,), device=dev)
    with ember.autocast(_dev_type(dev)):
        for out in (F.softmax(h, dim=1), F.log_softmax(h, dim=1), ember.exp(h), ember.log(h.abs()),
                    h.exp(), ember.pow(h, 2), ember.sum(h), h.sum(), h.mean(), ember.prod(h, 1),
                    ember.cumsum(h, 0), F.layer_norm(h, (6,)), F.group_norm(h[:, :, None], 2),
                    F.mse_loss(h, t), F.l1_loss(h, t), F.cross_entropy(h, target),
                    F.nll_loss(F.log_softmax(h, 1), target),
                    F.batch_norm(h, None, None, training=True)):
            assert out.dtype == ember.float32
        # Ops outside the lists keep their input dtype.
        assert ember.relu(h).dtype == low
        assert (h * 2).dtype == low
        # Mixed-dtype elementwise ops promote to the widest type.
        assert (h + ember.ones(4, 6, device=dev)).dtype == ember.float32
        # An fp32 op on fp32 input stays fp32; the result matches the fp32 computation.
        f = ember.randn(4, 6, device=dev)
        np.testing.assert_allclose(F.softmax(f, 1).cpu().numpy(), F.softmax(f, 1).cpu().numpy())
    # The float32 policy makes a bfloat16 sum accurate: it accumulates and returns float32.
    with ember.autocast(_dev_type(dev)):
        s = ember.sum(h)
    np.testing.assert_allclose(s.cpu().numpy(), h.float().cpu().numpy().sum(dtype=np.float64),
                               rtol=1e-5)


def test_linear_then_softmax_pipeline_and_backward(device):
    dev = device
    ember.manual_seed(0)
    lin = ember.nn.Linear(8, 4).to(dev)
    x = ember.randn(16, 8, device=dev, requires_grad=True)
    with ember.autocast(_dev_type(dev)):
        h = lin(x)
        assert h.dtype == _low(dev)
        y = F.log_softmax(h, dim=1)
        assert y.dtype == ember.float32
        loss = -y[:, 0].mean()
    loss.backward()
    # Gradients reach the float32 leaves in float32.
    assert lin.weight.grad.dtype == ember.float32
    assert x.grad.dtype == ember.float32
    # ... and agree with the float32 gradient to bfloat16 accuracy.
    w_grad = lin.weight.grad.clone()
    lin.weight.grad = None
    x.grad = None
    (-F.log_softmax(lin(x), dim=1)[:, 0].mean()).backward()
    np.testing.assert_allclose(w_grad.cpu().numpy(), lin.weight.grad.cpu().numpy(), rtol=5e-2, atol=2e-2)


def test_weight_cast_cache():
    lin = ember.nn.Linear(4, 4)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"):
        lin(x)
        lin(x)
        # One cached bfloat16 copy per float32 leaf requiring grad (weight, bias).
        assert ember._C._autocast_cache_size() == 2
        with ember.autocast("cpu"):
            lin(x)
        assert ember._C._autocast_cache_size() == 2  # inner exit does not clear
    assert ember._C._autocast_cache_size() == 0
    with ember.autocast("cpu", cache_enabled=False):
        lin(x)
        assert ember._C._autocast_cache_size() == 0
    # Tensors that do not require grad are never cached.
    w = ember.randn(4, 4)
    with ember.autocast("cpu"):
        ember.mm(w, w)
        assert ember._C._autocast_cache_size() == 0


def test_decorator_and_legacy_spellings():
    @ember.autocast("cpu")
    def f(a):
        assert ember.is_autocast_enabled("cpu")
        return ember.mm(a, a)

    a = ember.randn(3, 3)
    assert f(a).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match="ember.amp.autocast\\('cpu'"):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert ember.mm(a, a).dtype == ember.bfloat16
    if not ember.cuda.is_available():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ctx = ember.cuda.amp.autocast()
        msgs = " ".join(str(x.message) for x in w)
        assert "deprecated" in msgs and "CUDA is not available" in msgs
        with ctx:
            assert not ember.is_autocast_enabled("cuda")


def _row_calls(dev, low):
    """One call per row of the policy table: (inputs of the dtype that row changes) -> out.
    LowerPrecision rows get float32 inputs, Float32 rows 16-bit inputs, Promote rows mixed
    ones. Outside autocast each call returns another dtype (checked), so a row without effect
    fails."""
    f = {"device": dev}

    def r(*shape, dtype=ember.float32):
        return ember.randn(*shape, **f).to(dtype)

    def pos(*shape, dtype=ember.float32):
        return (ember.rand(*shape, **f) * 0.8 + 0.1).to(dtype)
    h = low
    tgt = ember.randint(0, 4, (3,), **f)
    return {
        # LowerPrecision: float32 in, the region's dtype out.
        "matmul": lambda: ember.matmul(r(3, 4), r(4, 2)),
        "mm": lambda: ember.mm(r(3, 4), r(4, 2)),
        "bmm": lambda: ember.bmm(r(2, 3, 4), r(2, 4, 2)),
        "addmm": lambda: ember.addmm(r(2), r(3, 4), r(4, 2)),
        "baddbmm": lambda: ember.baddbmm(r(2, 3, 2), r(2, 3, 4), r(2, 4, 2)),
        "addmv": lambda: ember.addmv(r(3), r(3, 4), r(4)),
        "mv": lambda: ember.mv(r(3, 4), r(4)),
        "linear": lambda: F.linear(r(3, 4), r(2, 4), r(2)),
        "convolution": lambda: F.conv2d(r(1, 2, 5, 5), r(3, 2, 3, 3)),
        # Float32: 16-bit in, float32 out.
        "softmax": lambda: F.softmax(r(3, 4, dtype=h), 1),
        "log_softmax": lambda: F.log_softmax(r(3, 4, dtype=h), 1),
        "layer_norm": lambda: F.layer_norm(r(3, 4, dtype=h), (4,)),
        "group_norm": lambda: F.group_norm(r(3, 4, 2, dtype=h), 2),
        "batch_norm": lambda: F.batch_norm(r(3, 4, dtype=h), None, None, training=True),
        "nll_loss": lambda: F.nll_loss(r(3, 4, dtype=h), tgt),
        "cross_entropy": lambda: F.cross_entropy(r(3, 4, dtype=h), tgt),
        "mse_loss": lambda: F.mse_loss(r(3, 4, dtype=h), r(3, 4, dtype=h), reduction="none"),
        "l1_loss": lambda: F.l1_loss(r(3, 4, dtype=h), r(3, 4, dtype=h), reduction="none"),
        "smooth_l1_loss": lambda: F.smooth_l1_loss(r(3, 4, dtype=h), r(3, 4, dtype=h), reduction="none"),
        "huber_loss": lambda: F.huber_loss(r(3, 4, dtype=h), r(3, 4, dtype=h), reduction="none"),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(pos(3, dtype=h), pos(3, dtype=h),
                                                               reduction="none"),
        "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(
            r(3, dtype=h), pos(3, dtype=h), reduction="none"),
        "exp": lambda: ember.exp(r(3, dtype=h)),
        "expm1": lambda: ember.expm1(r(3, dtype=h)),
        "log": lambda: ember.log(pos(3, dtype=h)),
        "log2": lambda: ember.log2(pos(3, dtype=h)),
        "log10": lambda: ember.log10(pos(3, dtype=h)),
        "log1p": lambda: ember.log1p(pos(3, dtype=h)),
        "reciprocal": lambda: ember.reciprocal(pos(3, dtype=h)),
        "rsqrt": lambda: ember.rsqrt(pos(3, dtype=h)),
        "acos": lambda: ember.acos(pos(3, dtype=h)),
        "asin": lambda: ember.asin(pos(3, dtype=h)),
        "cosh": lambda: ember.cosh(r(3, dtype=h)),
        "sinh": lambda: ember.sinh(r(3, dtype=h)),
        "tan": lambda: ember.tan(pos(3, dtype=h)),
        "pow": lambda: r(3, dtype=h) ** 2,
        "sum": lambda: ember.sum(r(3, dtype=h)),
        "mean": lambda: ember.mean(r(3, dtype=h)),
        "prod": lambda: ember.prod(r(3, dtype=h)),
        "cumsum": lambda: ember.cumsum(r(3, dtype=h), 0),
        "cumprod": lambda: ember.cumprod(r(3, dtype=h), 0),
        # Promote: mixed floating inputs, the widest out (dot refuses mixed dtypes outside).
        "cat": lambda: ember.cat([r(2, dtype=h), r(2, dtype=ember.float64)]),
        "stack": lambda: ember.stack([r(2, dtype=h), r(2, dtype=ember.float64)]),
        "addcmul": lambda: ember.addcmul(r(2, dtype=h), r(2, dtype=ember.float64), r(2, dtype=h)),
        "addcdiv": lambda: ember.addcdiv(r(2, dtype=h), pos(2, dtype=ember.float64), pos(2, dtype=h)),
        "atan2": lambda: ember.atan2(r(2, dtype=h), r(2, dtype=ember.float64)),
        "dot": lambda: ember.dot(r(2, dtype=h), r(2, dtype=ember.float64)),
    }


# Rows whose op already returns the policy's dtype without autocast (type promotion does
# what Promote says); the check under autocast still runs for them.
_NATURALLY_PROMOTED = {"cat", "stack", "addcmul", "addcdiv", "atan2"}


def test_every_policy_row_takes_effect(device):
    """Item 20: one behavioural check per row of the policy table (C++, ops/autocast.cpp):
    the row's op, run under autocast, returns the dtype its category says."""
    dev, low = device, _low(device)
    calls = _row_calls(dev, low)
    rows = ember._C._autocast_policy()
    assert sorted(op for op, _ in rows) == sorted(calls), "a policy row has no check (or a check no row)"
    want = {1: low, 2: ember.float32, 3: ember.float64}
    for op, cat in rows:
        with ember.autocast(_dev_type(dev)):
            got = calls[op]().dtype
        assert got == want[cat], f"{op}: autocast gave {got}, its row says {want[cat]}"
        if op in _NATURALLY_PROMOTED:
            continue
        try:  # without autocast the dtype differs: the row is what made the difference
            plain = calls[op]().dtype
        except RuntimeError:
            continue  # dot of mixed dtypes is an error outside autocast
        assert plain != want[cat], f"{op}: {plain} even without autocast"


def test_policy_table_is_data():
    cat = ember._C._autocast_category
    assert cat("mm") == 1 and cat("linear") == 1 and cat("convolution") == 1
    assert cat("softmax") == 2 and cat("layer_norm") == 2 and cat("sum") == 2
    assert cat("cat") == 3
    assert cat("relu") == 0


# ---------------------------------------------------------------- GradScaler kernels

@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_foreach_non_finite_check_and_unscale(dtype):
    dt = getattr(ember, dtype)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal(40000).astype(np.float32)  # spans several parallel chunks
    ga, gb = ember.from_numpy(a.copy()).to(dt), ember.from_numpy(b.copy()).to(dt)
    found = ember.zeros(())
    inv = ember.full((), 0.25)
    ember._C._amp_foreach_non_finite_check_and_unscale_([ga, gb], found, inv)
    assert found.item() == 0.0
    tol = 1e-2 if dtype == "bfloat16" else 1e-6
    np.testing.assert_allclose(ga.float().numpy(), ember.from_numpy(a).to(dt).float().numpy() * 0.25, rtol=tol)
    np.testing.assert_allclose(gb.float().numpy(), ember.from_numpy(b).to(dt).float().numpy() * 0.25, rtol=tol)
    # One inf in one grad flags found_inf; every grad is still unscaled.
    b[12345] = np.inf
    gb = ember.from_numpy(b.copy()).to(dt)
    ga = ember.from_numpy(a.copy()).to(dt)
    ember._C._amp_foreach_non_finite_check_and_unscale_([ga, gb], found, inv)
    assert found.item() == 1.0
    np.testing.assert_allclose(ga.float().numpy(), ember.from_numpy(a).to(dt).float().numpy() * 0.25, rtol=tol)
    # NaN and non-contiguous grads.
    found = ember.zeros(())
    g = ember.from_numpy(a.copy()).t()
    assert not g.is_contiguous()
    ember._C._amp_foreach_non_finite_check_and_unscale_([g], found, ember.full((), 2.0))
    np.testing.assert_allclose(g.numpy(), a.T * 2)
    assert found.item() == 0.0
    g[1, 1] = float("nan")
    ember._C._amp_foreach_non_finite_check_and_unscale_([g], found, ember.full((), 2.0))
    assert found.item() == 1.0


def test_foreach_unscale_errors():
    g = ember.ones(3)
    with pytest.raises(RuntimeError, match="found_inf must be a float32"):
        ember._C._amp_foreach_non_finite_check_and_unscale_([g], ember.zeros((), dtype=ember.float64),
                                                           ember.ones(()))
    with pytest.raises(RuntimeError, match="inv_scale must be a one-element"):
        ember._C._amp_foreach_non_finite_check_and_unscale_([g], ember.zeros(()), ember.ones(2))
    with pytest.raises(RuntimeError, match="grads must be floating point"):
        ember._C._amp_foreach_non_finite_check_and_unscale_([ember.ones(3, dtype=ember.int64)],
                                                           ember.zeros(()), ember.ones(()))
    ember._C._amp_foreach_non_finite_check_and_unscale_([], ember.zeros(()), ember.ones(()))


def test_update_scale_closed_form():
    scale = ember.full((), 1024.0)
    tracker = ember.zeros((), dtype=ember.int32)
    found = ember.zeros(())
    for i in range(1, 3):
        ember._C._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3)
        assert scale.item() == 1024.0 and tracker.item() == i
    ember._C._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3)
    assert scale.item() == 2048.0 and tracker.item() == 0
    found.fill_(1.0)
    ember._C._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3)
    assert scale.item() == 1024.0 and tracker.item() == 0
    # Never grows to inf.
    big = ember.full((), 3e38)
    ember._C._amp_update_scale_(big, ember.full((), 0, dtype=ember.int32), ember.zeros(()), 2.0, 0.5, 1)
    assert big.item() == pytest.approx(3e38, rel=1e-6)
    with pytest.raises(RuntimeError, match="growth_tracker must be a one-element int32"):
        ember._C._amp_update_scale_(scale, ember.zeros(()), found, 2.0, 0.5, 3)


# ---------------------------------------------------------------- GradScaler

def _regression_problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((256, 8)).astype(np.float32)
    w_true = rng.standard_normal((8, 1)).astype(np.float32)
    y = X @ w_true + 0.5
    return ember.from_numpy(X), ember.from_numpy(y)


def test_gradscaler_cpu_training_converges():
    X, y = _regression_problem()
    ember.manual_seed(0)
    model = ember.nn.Linear(8, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    scaler = ember.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=5)
    losses = []
    for _ in range(200):
        opt.zero_grad()
        with ember.autocast("cpu"):
            out = model(X)
            assert out.dtype == ember.bfloat16
            loss = F.mse_loss(out, y)
            assert loss.dtype == ember.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < 0.02 * losses[0]
    assert losses[-1] < 0.05
    assert scaler.get_scale() > 2.0**10  # grew: no overflow in this problem


def test_gradscaler_skips_steps_on_inf_and_backs_off():
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    x = ember.randn(4, 3)
    before = [p.detach().clone() for p in model.parameters()]
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    model.weight.grad[0, 0] = float("inf")
    assert scaler.step(opt) is None  # skipped
    scaler.update()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b.numpy())
    assert scaler.get_scale() == 4.0
    # Two clean steps: the parameters move, the scale doubles.
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert not np.array_equal(model.weight.detach().numpy(), before[0].numpy())
    assert scaler.get_scale() == 8.0


def test_gradscaler_unscale_gives_true_grads():
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 2)
    x = ember.randn(5, 3)
    model(x).sum().backward()
    ref = model.weight.grad.clone()
    model.zero_grad()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(model(x).sum()).backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), ref.numpy() * 1024, rtol=1e-5)
    scaler.unscale_(opt)
    np.testing.assert_allclose(model.weight.grad.numpy(), ref.numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    scaler.update()


def test_gradscaler_state_dict_and_pickle():
    s = ember.amp.GradScaler("cpu", init_scale=16.0, growth_factor=3.0, backoff_factor=0.25,
                             growth_interval=7)
    sd = s.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                  "growth_interval": 7, "_growth_tracker": 0}
    t = ember.amp.GradScaler("cpu")
    t.load_state_dict(sd)
    assert t.state_dict() == sd
    u = pickle.loads(pickle.dumps(s))
    assert u.state_dict() == sd
    assert copy.deepcopy(s).get_scale() == 16.0
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        t.load_state_dict({})
    off = ember.amp.GradScaler("cpu", enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    loss = ember.ones(())
    assert off.scale(loss) is loss
    with pytest.raises(AssertionError, match="growth factor"):
        ember.amp.GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        s.step(ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1), closure=lambda: 0)


def test_gradscaler_scale_iterables():
    s = ember.amp.GradScaler("cpu", init_scale=4.0)
    out = s.scale([ember.ones(2), (ember.ones(1),)])
    np.testing.assert_array_equal(out[0].numpy(), [4, 4])
    np.testing.assert_array_equal(out[1][0].numpy(), [4])
    with pytest.raises(ValueError, match="outputs must be a Tensor"):
        s.scale(3)


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-GPU path")
def test_gradscaler_cuda_without_gpu_disables_with_warning():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = ember.amp.GradScaler()
    assert not s.is_enabled()
