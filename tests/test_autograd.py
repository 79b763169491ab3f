"""Autograd semantics: the engine, leaves and grads, graph names, retain_graph,
grad modes, in-place checks and version counters, views and CopySlices, hooks,
anomaly mode, custom Functions, autograd.grad / functional, memory and depth."""
import gc
import threading
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import Function, gradcheck


def leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


# ---- leaves, grads, backward ----------------------------------------------------------------

def test_leaf_flags_and_grad_accumulation():
    x = leaf([1.0, 2.0, 3.0])
    assert x.is_leaf and x.requires_grad and x.grad is None and x.grad_fn is None
    y = x * x
    assert not y.is_leaf and y.requires_grad
    y.backward(ember.ones(3, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).backward(ember.ones(3, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])  # accumulates
    g = x.grad
    x.grad.zero_()
    assert x.grad is g  # the same tensor object, zeroed in place
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])
    x.grad = None
    assert x.grad is None
    x.grad = ember.ones(3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ember.ones(2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = ember.ones(3)


def test_requires_grad_setting_rules():
    x = ember.ones(2)
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad and x.requires_grad_(False) is x and not x.requires_grad
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    y.requires_grad = True  # allowed: already true
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ember.ones(2, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        ember.tensor([1, 2], requires_grad=True)


def test_backward_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ember.ones(2).backward(ember.ones(2))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(3, dtype=ember.float64))


def test_scalar_backward_needs_no_gradient():
    x = leaf(2.0)
    y = x * x * x
    y.backward()
    assert x.grad.item() == pytest.approx(12.0)


def test_node_names_and_next_functions():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    z = x * y + x
    assert z.grad_fn.name() == "AddBackward0"
    (mul, _), (acc, _) = z.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and acc.name() == "AccumulateGrad"
    assert acc.variable is x
    assert repr(z.grad_fn).startswith("<AddBackward0 object at 0x")
    assert "grad_fn=<AddBackward0>" in repr(z)
    assert "requires_grad=True" in repr(x)


def test_retain_graph_and_freed_graph_error():
    x = leaf([1.0, 2.0])
    y = (x * x).exp()
    g = ember.ones(2, dtype=ember.float64)
    y.backward(g, retain_graph=True)
    y.backward(g)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward(g)


def test_gradient_flows_to_several_paths_and_sums():
    x = leaf([1.0, 2.0, 3.0])
    a = x * 2
    b = x.exp()
    (a + b + a * b).backward(ember.ones(3, dtype=ember.float64))
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 + np.exp(v) + 2 * np.exp(v) + 2 * v * np.exp(v))


def test_broadcast_gradient_sums_back():
    x = leaf([[1.0], [2.0]])
    y = leaf([10.0, 20.0, 30.0])
    (x * y).backward(ember.ones(2, 3, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [[60.0], [60.0]])
    np.testing.assert_allclose(y.grad.numpy(), [3.0, 3.0, 3.0])


def test_retain_grad_and_non_leaf_grad_warning():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    z = y * y
    z.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    w = x * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert w.grad is None


def test_detach_data_and_detach_():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.data_ptr() == y.data_ptr()
    d.add_(1)  # shares the version counter with y
    assert y._version == d._version
    data = x.data
    assert not data.requires_grad and data.data_ptr() == x.data_ptr()
    data.mul_(10)  # no version bump visible to x's autograd
    np.testing.assert_allclose(x.detach().numpy(), [10.0, 20.0])
    y2 = x * 2
    assert y2.detach_() is y2 and not y2.requires_grad and y2.grad_fn is None


# ---- grad modes ----------------------------------------------------------------------------

def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    seen = []

    def worker():
        seen.append(ember.is_grad_enabled())
    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [True]


def test_inference_mode():
    x = leaf([1.0])
    with ember.inference_mode():
        y = x * 2
        assert not y.requires_grad and y.is_inference()
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        y.requires_grad_()
    assert not (x * 2).is_inference()


# ---- in-place and version counters --------------------------------------------------------------

def test_inplace_on_leaf_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with ember.no_grad():
        x.add_(1)  # fine without grad
    np.testing.assert_array_equal(x.detach().numpy(), [2.0, 3.0])


def test_modified_saved_tensor_error_names_op_and_location():
    x = leaf([1.0, 2.0, 3.0, 4.0, 5.0])
    a = x + 1
    b = a * a  # saves a
    a.mul_(2)  # bumps a's version
    with pytest.raises(RuntimeError) as e:
        b.backward(ember.ones(5, dtype=ember.float64))
    msg = str(e.value)
    assert ("one of the variables needed for gradient computation has been modified by an inplace "
            "operation: [ember.DoubleTensor [5]], which is output 0 of AddBackward0, is at version 1; "
            "expected version 0 instead.") in msg
    assert "mul_" in msg and "test_autograd.py" in msg  # beyond PyTorch: which op, where


def test_version_counter_shared_by_views():
    x = ember.zeros(4)
    v = x[1:3]
    assert x._version == v._version == 0
    v.add_(1)
    assert x._version == 1 and v._version == 1
    x.zero_()
    assert v._version == 2


def test_inplace_on_non_leaf_records_and_is_correct():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.mul_(x)  # y = 2x * x
    assert y.grad_fn.name() == "MulBackward0"
    y.backward(ember.ones(3, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])
    assert gradcheck(lambda t: (t * 2).sin_(), (leaf([0.1, 0.2]),))
    assert gradcheck(lambda t: (t * 1).add_(t).mul_(t), (leaf([0.1, 0.2]),))
    # exp saves its output: modifying it in place breaks exp's backward, as in PyTorch
    z = leaf([0.1]).exp()
    z.sin_()
    with pytest.raises(RuntimeError, match="output 0 of ExpBackward0"):
        z.backward(ember.ones(1, dtype=ember.float64))


def test_copy_slices_through_setitem():
    a = leaf([1.0, 2.0, 3.0, 4.0, 5.0])
    c = ember.zeros(4, 7)
    c[1, 1:-1] = a
    assert c.grad_fn.name() == "CopySlices" and c.requires_grad
    (c * 3).backward(ember.ones(4, 7, dtype=ember.float32))
    np.testing.assert_allclose(a.grad.numpy(), [3.0] * 5)


def test_inplace_through_view_of_non_leaf():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = x * 1
    v = y[1:3]
    v.mul_(10)
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn is not None
    y.backward(ember.ones(4, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 10.0, 10.0, 1.0])
    assert gradcheck(lambda t: (lambda u: (u[::2].mul_(3), u)[1])(t * 1), (leaf([1.0, 2.0, 3.0]),))


def test_out_with_requires_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic differentiation"):
        ember.add(x, 1, out=ember.zeros(2, dtype=ember.float64))


# ---- hooks -------------------------------------------------------------------------------------

def test_register_hook_can_replace_grad_and_be_removed():
    x = leaf([1.0, 2.0])
    seen = []
    h = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (x * 3).backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])
    h.remove()
    x.grad = None
    (x * 3).backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    y = x * 2
    y.register_hook(lambda g: g * 0)
    (y * 5).backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])  # zeroed on the way
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(2).register_hook(lambda g: g)


# ---- autograd.grad ------------------------------------------------------------------------------

def test_autograd_grad_and_higher_order():
    x = leaf([0.5, 1.5])
    y = x ** 3
    (g,) = ember.autograd.grad(y, x, ember.ones(2, dtype=ember.float64), create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([0.5, 1.5]) ** 2)
    assert x.grad is None  # grad() does not accumulate
    (h,) = ember.autograd.grad(g, x, ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(h.numpy(), 6 * np.array([0.5, 1.5]))
    z = leaf([1.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(x * 2, [x, z], ember.ones(2, dtype=ember.float64))
    gx, gz = ember.autograd.grad(x * 2, [x, z], ember.ones(2, dtype=ember.float64), allow_unused=True)
    assert gz is None


def test_backward_inputs_restricts_accumulation():
    x, y = leaf([1.0]), leaf([2.0])
    (x * y).backward(ember.ones(1, dtype=ember.float64), inputs=[x])
    assert x.grad.item() == 2.0 and y.grad is None


def test_grad_of_intermediate():
    x = leaf([1.0, 2.0])
    y = x * 3
    z = y * y
    (gy,) = ember.autograd.grad(z, y, ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(gy.numpy(), [6.0, 12.0])


# ---- anomaly mode -------------------------------------------------------------------------------

class _BadBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def test_anomaly_mode_reports_forward_traceback():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with ember.autograd.detect_anomaly():
            x = leaf([1.0])
            y = _BadBackward.apply(x)
            with pytest.warns(UserWarning, match="Error detected in _BadBackwardBackward. Traceback of forward call"):
                with pytest.raises(ValueError, match="boom in backward"):
                    y.backward(ember.ones(1, dtype=ember.float64))
    assert not ember.autograd.is_anomaly_enabled()


def test_anomaly_mode_nan_check():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.autograd.detect_anomaly():
            x = leaf([0.0])
            y = x.sqrt() * 0  # d/dx sqrt at 0 is inf; times 0 -> nan
            with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
                y.backward(ember.ones(1, dtype=ember.float64))


# ---- custom Functions ----------------------------------------------------------------------------

class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        r = x.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r


class ScaleBy(Function):
    @staticmethod
    def forward(ctx, x, k):  # k is a Python number
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        assert ctx.needs_input_grad == (True, False)
        return g * ctx.k, None


def test_custom_function_basics():
    x = leaf([0.1, 0.2, 0.3])
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    assert gradcheck(Exp.apply, (leaf([0.5, -0.5]),))
    assert gradcheck(lambda t: ScaleBy.apply(t, 3.0), (leaf([1.0, 2.0]),))
    y.backward(ember.ones(3, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.1, 0.2, 0.3]))


def test_custom_function_saved_tensor_version_check_and_wrong_grad_count():
    x = leaf([0.5])
    y = Exp.apply(x)
    with ember.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(ember.ones(1, dtype=ember.float64))

    class Wrong(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g  # one gradient for two inputs

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Wrong.apply(leaf([1.0]), leaf([2.0])).backward(ember.ones(1, dtype=ember.float64))


def test_custom_function_mark_dirty_non_differentiable_materialize():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0, 2.0])
    y = x * 1
    z = AddOneInPlace.apply(y)
    assert z is y and y.grad_fn.name() == "AddOneInPlaceBackward"
    z.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])

    class ValAndIdx(Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).to(ember.float64)
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gidx):
            assert gidx is None  # not materialized
            return g * 2

    v, i = ValAndIdx.apply(leaf([1.0, -1.0]))
    assert v.requires_grad and not i.requires_grad
    v.backward(ember.ones(2, dtype=ember.float64))


def test_custom_function_forward_may_enable_grad():
    class Implicit(Function):
        @staticmethod
        def forward(ctx, y):
            assert not ember.is_grad_enabled()
            with ember.enable_grad():
                z = y.detach().requires_grad_()
                (g,) = ember.autograd.grad(z * z, z, ember.ones_like(z))
            ctx.save_for_backward(y)
            return g  # 2y

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    assert gradcheck(Implicit.apply, (leaf([1.0, 3.0]),))


# ---- functional ---------------------------------------------------------------------------------

def test_functional_jacobian_hessian_vjp_jvp_hvp():
    from ember.autograd.functional import hessian, hvp, jacobian, jvp, vjp
    x = leaf([1.0, 2.0])

    def f(t):
        return t * t * ember.tensor([1.0, 3.0], dtype=ember.float64)
    J = jacobian(f, x)
    np.testing.assert_allclose(J.numpy(), np.diag([2.0, 12.0]))
    out, v = vjp(f, x, ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(v.numpy(), [2.0, 12.0])
    out, jv = jvp(f, x, ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(jv.numpy(), [2.0, 12.0])

    def s(t):
        return (t * t * t).unbind(0)[0] + (t * t).unbind(0)[1]
    H = hessian(s, x)
    np.testing.assert_allclose(H.numpy(), [[6.0, 0.0], [0.0, 2.0]])
    _, hv = hvp(s, x, ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(hv.numpy(), [6.0, 2.0])


def test_graph_rendering_dot():
    x = leaf([1.0])
    y = (x * 2).exp()
    dot = ember.autograd.graph.to_dot(y)
    assert "ExpBackward0" in dot and "MulBackward0" in dot and "AccumulateGrad" in dot
    assert dot.startswith("digraph")


# ---- memory, depth, threads ----------------------------------------------------------------------

def test_saved_tensors_released_after_backward():
    n = 1 << 18  # 2 MiB of float64
    x = leaf(np.ones(n))
    before = ember._C._cpu_allocator_stats()["allocated_bytes"]
    a = x * 2
    b = a * a  # saves a
    del a
    gc.collect()
    held = ember._C._cpu_allocator_stats()["allocated_bytes"]
    assert held - before >= 2 * 8 * n - 4096  # a and b, a kept alive by the graph
    b.backward(ember.ones(n, dtype=ember.float64))
    del x
    gc.collect()
    after = ember._C._cpu_allocator_stats()["allocated_bytes"]
    assert held - after >= 8 * n - 4096  # a was released with the saved tensors (b is still alive)
    assert b.grad_fn._released()


def test_training_loop_memory_is_flat():
    w = leaf(np.ones(64) * 0.1)
    x = ember.tensor(np.linspace(0, 1, 64))
    stats0 = None
    for i in range(10_000):
        loss = ((w * x - 1.0) ** 2 * 0.5)
        loss.backward(ember.ones(64, dtype=ember.float64))
        with ember.no_grad():
            w.sub_(w.grad * 0.01)
            w.grad.zero_()
        if i == 500:
            stats0 = ember._C._cpu_allocator_stats()["allocated_bytes"]
    assert ember._C._cpu_allocator_stats()["allocated_bytes"] <= stats0


def test_deep_graph_backward_and_destruction_do_not_overflow():
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward(ember.ones(1, dtype=ember.float64))
    assert x.grad.item() == 1.0
    z = x
    for _ in range(100_000):
        z = z + 0.0
    del z  # destroying the graph is iterative too
    gc.collect()


def test_concurrent_backward_on_independent_graphs():
    errors = []

    def work(seed):
        try:
            for _ in range(200):
                x = leaf(np.random.default_rng(seed).standard_normal(16))
                y = (x * x).exp()
                y.backward(ember.ones(16, dtype=ember.float64))
                np.testing.assert_allclose(x.grad.numpy(), (2 * x * (x * x).exp()).detach().numpy())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_reduction_out_with_requires_grad_raises():
    x = leaf([1.0, 2.0])
    for call in (lambda: ember.amax(x, 0, out=ember.zeros((), dtype=ember.float64)),
                 lambda: ember.max(x, 0, out=(ember.zeros((), dtype=ember.float64),
                                              ember.zeros((), dtype=ember.int64))),
                 lambda: ember.logsumexp(x, 0, out=ember.zeros((), dtype=ember.float64))):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            call()


def test_inplace_on_empty_broadcast_view_is_allowed():
    a = ember.zeros(1, 0).expand(2, 0)
    a.add_(ember.zeros(2, 0))  # nothing is written, so nothing overlaps
    assert a.shape == (2, 0)


# ---- gradcheck itself and assert_close ---------------------------------------------------------

class _WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # should be 2 * g * x


def test_gradcheck_catches_a_wrong_backward():
    x = leaf([0.3, -1.2, 2.0])
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_WrongSquare.apply, (x,))
    assert gradcheck(_WrongSquare.apply, (x,), raise_exception=False) is False
    with pytest.raises(ember.autograd.GradcheckError):
        ember.autograd.gradgradcheck(lambda t: _WrongSquare.apply(t) * t, (x,))


def test_gradcheck_signature_defaults_and_warning():
    import inspect
    sig = inspect.signature(gradcheck)
    assert sig.parameters["eps"].default == 1e-6
    assert sig.parameters["atol"].default == 1e-5
    assert sig.parameters["rtol"].default == 1e-3
    assert sig.parameters["raise_exception"].default is True
    assert sig.parameters["nondet_tol"].default == 0.0
    assert sig.parameters["fast_mode"].default is False
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        gradcheck(lambda t: t * 2, (ember.tensor([1.0, 2.0], requires_grad=True),), raise_exception=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (ember.tensor([1.0], dtype=ember.float64),))


def test_assert_close_tolerances_and_report():
    from ember.testing import assert_close
    a = ember.tensor([1.0, 2.0, 3.0])
    assert_close(a, a + 1e-7)  # within float32's defaults
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3 \(33.3%\)"):
        assert_close(a, ember.tensor([1.0, 2.0, 3.1]))
    with pytest.raises(AssertionError, match="Greatest absolute difference"):
        assert_close(a, ember.tensor([1.0, 2.5, 3.0]))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(a, a.double())
    assert_close(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1, 2]), ember.tensor([1, 3]))  # integers compare exactly
    with pytest.raises(AssertionError, match="shape"):
        assert_close(a, ember.tensor([1.0, 2.0]))
    assert_close(ember.tensor([float("nan")]), ember.tensor([float("nan")]), equal_nan=True)


def test_gradcheck_accepts_non_contiguous_inputs():
    base = leaf(np.arange(12.0).reshape(3, 4) / 10)
    x = base.detach().t().requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(lambda t: (t * t).sin(), (x,))
