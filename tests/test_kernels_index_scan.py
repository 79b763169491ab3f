"""The CUDA indexing, join, scatter-reduce and scan kernels (backends/cuda/index.cu and
scan.cu) against the CPU kernels, through the public ops: advanced indexing (x[idx], masks,
index_put_), index_select / take / gather / scatter / scatter_add / index_add / embedding
(index_gather, index_scatter, index_offsets), nonzero / masked_select (nonzero), flip / roll /
repeat_interleave (index_remap), scatter_reduce / index_reduce / scatter(reduce=)
(scatter_reduce), cumsum / cumprod (scan) and cummax / cummin (cummaxmin); forward, the
gradients of the differentiable ones, and the errors (out-of-range indices raise IndexError
on both devices).

How these tests run on each device: device_compare.py.
"""
import numpy as np
import pytest
from device_compare import (
    ALL,
    FLOATS,
    INTS,
    assert_same,
    check,
    dt,
    make,
    noncontig,
    seeded,
    skip_on_cpu,
    to_dev,
)

import ember

pytestmark = pytest.mark.usefixtures("compare_device")

# Floating sums of duplicate indices run as atomics in an unspecified order on CUDA.
ATOMIC_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2), "float32": (1e-5, 1e-5),
              "float64": (1e-12, 1e-12)}


def idx(values, dtype=np.int64):
    return ember.from_numpy(np.asarray(values, dtype=dtype))


def rand_idx(rng, high, shape, low=0):
    return ember.from_numpy(rng.integers(low, high, size=shape).astype(np.int64))


def perm_idx(rng, n, k=None):
    """k distinct indices in [0, n) (no duplicates: plain scatters are then defined)."""
    return ember.from_numpy(rng.permutation(n)[: n if k is None else k].astype(np.int64))


def check_grad(fn, *inputs, tol=None, what=""):
    """fn on CPU leaves and on device leaves: compares the outputs and every input's .grad."""
    rng = seeded("grad", what)
    results, weights = [], []
    for dev_side in (False, True):
        xs = [to_dev(x) if dev_side else x for x in inputs]
        leaves = [x.detach().clone().requires_grad_() if x.is_floating_point() else x for x in xs]
        out = fn(*leaves)
        if not weights:
            weights.append(make(tuple(out.shape), str(out.dtype).replace("ember.", ""), rng))
        (out * (to_dev(weights[0]) if dev_side else weights[0])).sum().backward()
        results.append((out, [x.grad for x in leaves if x.is_floating_point()]))
    (e_out, e_grads), (a_out, a_grads) = results
    assert_same(e_out, a_out, tol, what + " forward")
    for e, a in zip(e_grads, a_grads):
        assert_same(e, a, tol, what + " grad")


# ---- advanced indexing -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", ALL)
def test_advanced_index_get(dtype_name):
    rng = seeded("index_get", dtype_name)
    x = make((5, 6, 7), dtype_name, rng)
    i64 = idx([0, 4, -1, 2, 2])
    i32 = idx([[1, -2], [3, 0]], np.int32)
    cases = [
        ("int64", lambda t, i: t[i], (x, i64)),
        ("int32 2-d", lambda t, i: t[i], (x, i32)),
        ("second dim", lambda t, i: t[:, i], (x, i64)),
        ("last dim", lambda t, i: t[..., i], (x, idx([6, 0, -7]))),
        ("broadcast multi-index", lambda t, a, b: t[a, b], (x, idx([[0], [3]]), idx([1, 5, -1]))),
        ("non-adjacent (dims to the front)", lambda t, a, b: t[a, :, b],
         (x, idx([0, 1, 4]), idx([6, 2, 0]))),
        ("mixed slices and int", lambda t, i: t[1:4, i, ::2], (x, idx([5, 0, 3]))),
        ("None, slice, index", lambda t, i: t[None, ::2, i], (x, i64)),
        ("all three dims", lambda t, a, b, c: t[a, b, c],
         (x, idx([0, 1, 4]), idx([5, 5, 0]), idx([-1, 3, 2]))),
        ("empty index", lambda t, i: t[i], (x, idx([], np.int64))),
        ("empty index 2-d", lambda t, i: t[:, i], (x, idx(np.zeros((0, 3)), np.int64))),
        ("non-contiguous self", lambda t, i: t[:, i], (noncontig((4, 9), dtype_name, rng), i64)),
        ("transposed self", lambda t, i: t[i], (make((6, 5), dtype_name, rng).t(), i64)),
        ("1-d", lambda t, i: t[i], (make((11,), dtype_name, rng), idx([10, -11, 3, 3]))),
        ("0-d index", lambda t, i: t[i], (x, idx(3))),
    ]
    for what, f, args in cases:
        check(f, *args, what=f"{what} {dtype_name}")
    # large: several blocks and grid-stride iterations of the gather
    big = make((300, 257), dtype_name, rng)
    check(lambda t, i: t[i], big, rand_idx(rng, 300, (4000,)), what=f"large rows {dtype_name}")
    check(lambda t, i, j: t[i, j], big, rand_idx(rng, 300, (70000,)),
          rand_idx(rng, 257, (70000,), low=-257), what=f"large points {dtype_name}")


@pytest.mark.parametrize("dtype_name", ["float32", "int64", "bool"])
def test_masks_and_masked_select(dtype_name):
    rng = seeded("mask", dtype_name)
    x = make((6, 7), dtype_name, rng)
    m = make((6, 7), "bool", rng)
    check(lambda t, k: t[k], x, m, what="x[mask]")
    check(lambda t, k: t[k], x, m[:, 0], what="x[row mask]")
    check(lambda t, k: t[:, k], x, m[0], what="x[:, col mask]")
    check(lambda t, k: t[k], x, m.to(ember.uint8), what="x[uint8 mask]")
    check(lambda t, k: t[k], x, ember.zeros(6, 7, dtype=ember.bool), what="x[all False]")
    check(lambda t, k: t[k], make((), dtype_name, rng), ember.tensor(True), what="0-d mask")
    check(lambda t: t[True], x, what="x[True]")
    check(lambda t: t[False], x, what="x[False]")
    check(ember.masked_select, x, m, what="masked_select")
    check(ember.masked_select, x, m[0], what="masked_select broadcast mask")
    check(ember.masked_select, make((), dtype_name, rng), ember.tensor(True), what="0-d")
    check(ember.masked_select, noncontig((5, 8), dtype_name, rng), make((5, 8), "bool", rng),
          what="masked_select non-contiguous")
    big = make((513, 301), dtype_name, rng)
    check(ember.masked_select, big, make((513, 301), "bool", rng), what="large masked_select")
    # a mask of the wrong shape
    check(lambda t, k: t[k], x, m[:5], what="bad mask shape")


def test_cpu_indices_of_a_device_tensor():
    rng = seeded("cpu indices")
    x = make((6, 5), "float32", rng)
    i = idx([5, 0, -1])
    m = make((6,), "bool", rng)
    xd = to_dev(x)
    assert_same(x[i], xd[i], what="x_dev[cpu index]")
    assert_same(x[m], xd[m], what="x_dev[cpu mask]")
    assert_same(x[i, i[1:2]], xd[i, i[1:2]], what="x_dev[cpu, cpu]")
    y, yd = x.clone(), xd.clone()
    y[i] = 2.0
    yd[i] = 2.0
    assert_same(y, yd, what="x_dev[cpu index] = v")


@pytest.mark.parametrize("dtype_name", ALL)
def test_index_put(dtype_name):
    rng = seeded("index_put", dtype_name)
    tol = ATOMIC_TOL.get(dtype_name)
    x = make((6, 5), dtype_name, rng)
    v = make((3, 5), dtype_name, rng)
    unique = perm_idx(rng, 6, 3)
    dup = idx([1, 4, 1, 1, -2, 0])
    vd = make((6, 5), dtype_name, rng)

    def put(t, i, val, acc):
        return ember.index_put(t, (i,), val, acc)

    def put_(t, i, val, acc):
        r = t.clone()
        r.index_put_((i,), val, accumulate=acc)
        return r

    for acc in (False, True):
        check(put, x, unique, v, acc, what=f"index_put acc={acc}")
        check(put_, x, unique, v, acc, what=f"index_put_ acc={acc}")
        check(put_, x, unique, v[0], acc, what=f"broadcast value acc={acc}")
        check(put_, x.t(), perm_idx(rng, 5, 2), make((2, 6), dtype_name, rng), acc,
              what=f"transposed self acc={acc}")
        check(put_, x, idx([], np.int64), make((0, 5), dtype_name, rng), acc,
              what=f"empty acc={acc}")
    check(put_, x, dup, vd, True, tol=tol, what="duplicates accumulate")
    check(lambda t, a, b, val: ember.index_put(t, (a, b), val, True), x, dup,
          idx([0, 4, 0, 0, 3, 2]), make((6,), dtype_name, rng), tol=tol,
          what="point duplicates accumulate")
    big = make((64, 33), dtype_name, rng)
    check(put_, big, rand_idx(rng, 64, (5000,)), make((5000, 33), dtype_name, rng), True,
          tol=None if dtype_name not in FLOATS else (ATOMIC_TOL[dtype_name][0] * 10,
                                                      ATOMIC_TOL[dtype_name][1] * 30),
          what="many duplicates accumulate")

    def setitem(t, i, val):
        r = t.clone()
        r[i] = val
        return r

    check(setitem, x, unique, v, what="x[idx] = v")
    check(setitem, x, make((6, 5), "bool", rng), make((), dtype_name, rng), what="x[mask] = v")
    check(lambda t, i: setitem(t, (slice(None), i), t[:, :1]), x, perm_idx(rng, 5, 4),
          what="x[:, idx] = x[:, :1] (same storage)")
    # out of range: nothing written, IndexError on both
    check(put_, x, idx([0, 6]), v[:2], False, what="index 6 of 6")
    check(put_, x, idx([-7]), v[:1], True, what="index -7 of 6")


def test_index_get_put_grad():
    rng = seeded("index grad")
    for dtype_name in FLOATS:
        tol = ATOMIC_TOL[dtype_name]
        x = make((6, 5), dtype_name, rng)
        check_grad(lambda t, i: t[i], x, idx([1, 1, -1, 3]), tol=tol, what=f"x[idx] {dtype_name}")
        check_grad(lambda t, a, b: t[a, b], x, idx([0, 2]), idx([4, 4]), tol=tol,
                   what=f"x[a, b] {dtype_name}")
        check_grad(lambda t: t[t > 0], x, tol=tol, what=f"x[mask] {dtype_name}")
        check_grad(lambda t, v, i: ember.index_put(t, (i,), v, True), x,
                   make((3, 5), dtype_name, rng), idx([2, 0, 2]), tol=tol,
                   what=f"index_put acc {dtype_name}")
        check_grad(lambda t, v, i: ember.index_put(t, (i,), v, False), x,
                   make((2, 5), dtype_name, rng), idx([2, 0]), tol=tol,
                   what=f"index_put {dtype_name}")
        check_grad(lambda t, m: ember.masked_select(t, m), x, make((5,), "bool", rng), tol=tol,
                   what=f"masked_select {dtype_name}")


# ---- dim-wise gathers and scatters -------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", ALL)
def test_index_select_take_gather(dtype_name):
    rng = seeded("select", dtype_name)
    x = make((5, 6, 7), dtype_name, rng)
    for dim in (0, 1, -1):
        n = x.shape[dim]
        check(ember.index_select, x, dim, rand_idx(rng, n, (9,)), what=f"index_select {dim}")
        check(ember.index_select, x, dim, rand_idx(rng, n, (4,)).to(ember.int32),
              what=f"index_select int32 {dim}")
        check(ember.index_select, x, dim, idx([], np.int64), what=f"index_select empty {dim}")
        check(ember.index_select, x, dim, idx([n]), what=f"index_select out of range {dim}")
        check(ember.index_select, x, dim, idx([-1]), what=f"index_select negative {dim}")
    check(ember.index_select, x.transpose(0, 2), 1, idx([0, 5, 5]), what="non-contiguous")
    check(ember.index_select, make((), dtype_name, rng), 0, idx([0]), what="0-d self")
    check(ember.index_select, make((), dtype_name, rng), 0, idx([1]), what="0-d out of range")
    check(ember.index_select, make((1000, 70), dtype_name, rng), 0, rand_idx(rng, 1000, (3000,)),
          what="large index_select")
    check(ember.index_select, x, 1, idx([0, 2, 4, 1])[::2], what="strided index")

    check(ember.take, x, rand_idx(rng, 210, (4, 3), low=-210), what="take")
    check(ember.take, x.transpose(0, 1), rand_idx(rng, 210, (20,)), what="take non-contiguous")
    check(ember.take, x, idx([210]), what="take out of range")
    check(ember.take, x, idx([-211]), what="take negative out of range")

    for dim in (0, 1, 2):
        shape = [4, 5, 6]
        shape[dim] = 9
        index = rand_idx(rng, x.shape[dim], tuple(shape))
        check(ember.gather, x, dim, index, what=f"gather dim {dim}")
        check(ember.gather, x, dim, index[:2, :3, :4].contiguous(), what=f"gather smaller {dim}")
    check(ember.gather, x.transpose(0, 2), 1, rand_idx(rng, 6, (7, 3, 5)),
          what="gather non-contiguous self")
    check(ember.gather, x, 1, rand_idx(rng, 6, (5, 3, 7))[:, :, ::2], what="gather strided index")
    check(ember.gather, make((), dtype_name, rng), 0, idx(0), what="gather 0-d")
    check(ember.gather, x, 0, idx(np.zeros((0, 6, 7)), np.int64), what="gather empty")
    check(ember.gather, x, 1, idx(np.full((5, 1, 7), 6)), what="gather out of range")
    check(ember.gather, x, 1, idx(np.full((5, 1, 7), -1)), what="gather negative index")


@pytest.mark.parametrize("dtype_name", ALL)
def test_scatter_scatter_add_index_add(dtype_name):
    rng = seeded("scatter", dtype_name)
    tol = ATOMIC_TOL.get(dtype_name)
    x = make((6, 5), dtype_name, rng)
    src = make((6, 5), dtype_name, rng)
    # plain scatter: no duplicate targets (unspecified winner otherwise, as in PyTorch)
    uniq0 = ember.from_numpy(np.stack([rng.permutation(6)[:4] for _ in range(5)], 1))
    check(ember.scatter, x, 0, uniq0, src, what="scatter src dim 0")
    check(lambda t, i, s: t.clone().scatter_(0, i, s), x, uniq0, src, what="scatter_ src")
    uniq1 = ember.from_numpy(np.stack([rng.permutation(5)[:3] for _ in range(6)], 0))
    check(ember.scatter, x, 1, uniq1, src, what="scatter src dim 1")
    value = True if dtype_name == "bool" else 2
    check(lambda t, i: ember.scatter(t, 1, i, value), x, uniq1, what="scatter value")
    check(lambda t, i: t.clone().scatter_(1, i, value), x, uniq1, what="scatter_ value")
    check(ember.scatter, x.t(), 0, uniq1.t().contiguous(), make((3, 6), dtype_name, rng),
          what="scatter transposed")
    check(ember.scatter, x, 1, idx(np.full((6, 1), 5)), src, what="scatter out of range")

    dup = rand_idx(rng, 6, (9, 5))
    src9 = make((9, 5), dtype_name, rng)
    check(ember.scatter_add, x, 0, dup, src9, tol=tol, what="scatter_add duplicates")
    check(lambda t, i, s: t.clone().scatter_add_(1, i, s), x, rand_idx(rng, 5, (6, 8)),
          make((6, 8), dtype_name, rng), tol=tol, what="scatter_add_ dim 1")
    check(ember.scatter_add, x, 0, dup[:4, :3].contiguous(), src9, tol=tol,
          what="scatter_add index smaller than src")
    check(ember.scatter_add, x, 0, dup[:0], src9, what="scatter_add empty")
    check(ember.scatter_add, x, 0, idx(np.full((1, 5), -1)), src9, what="scatter_add negative")

    n = 5000
    check(ember.scatter_add, make((40,), dtype_name, rng), 0, rand_idx(rng, 40, (n,)),
          make((n,), dtype_name, rng),
          tol=None if dtype_name not in FLOATS else (ATOMIC_TOL[dtype_name][0] * 10,
                                                      ATOMIC_TOL[dtype_name][1] * 30),
          what="scatter_add many duplicates")

    for dim in (0, 1):
        m = 7
        shape = [6, 5]
        shape[dim] = m
        source = make(tuple(shape), dtype_name, rng)
        index = rand_idx(rng, x.shape[dim], (m,))
        check(ember.index_add, x, dim, index, source, tol=tol, what=f"index_add dim {dim}")
        check(ember.index_add, x, dim, index.to(ember.int32), source, tol=tol,
              what=f"index_add int32 {dim}")
        if dtype_name != "bool":
            alpha = 2.5 if dtype_name in FLOATS else 3
            check(lambda t, i, s, d=dim: ember.index_add(t, d, i, s, alpha=alpha), x, index,
                  source, tol=tol, what=f"index_add alpha {dim}")
        check(lambda t, i, s, d=dim: t.clone().index_add_(d, i, s), x, index, source, tol=tol,
              what=f"index_add_ {dim}")
    check(ember.index_add, x, 0, idx([6]), src[:1], what="index_add out of range")
    check(ember.index_add, x, 0, idx([-1]), src[:1], what="index_add negative")
    check(ember.index_add, make((), dtype_name, rng), 0, idx([0]), make((), dtype_name, rng),
          what="index_add 0-d")


def test_gather_scatter_grad():
    rng = seeded("scatter grad")
    for dtype_name in FLOATS:
        tol = ATOMIC_TOL[dtype_name]
        x = make((6, 5), dtype_name, rng)
        i = rand_idx(rng, 6, (8, 5))
        check_grad(lambda t, j: ember.gather(t, 0, j), x, i, tol=tol, what=f"gather {dtype_name}")
        check_grad(lambda t, j: ember.index_select(t, 1, j), x, idx([4, 0, 4]), tol=tol,
                   what=f"index_select {dtype_name}")
        check_grad(lambda t, s, j: ember.scatter_add(t, 0, j, s), x,
                   make((8, 5), dtype_name, rng), i, tol=tol, what=f"scatter_add {dtype_name}")
        u = ember.from_numpy(np.stack([rng.permutation(6)[:4] for _ in range(5)], 1))
        check_grad(lambda t, s, j: ember.scatter(t, 0, j, s), x, make((4, 5), dtype_name, rng), u,
                   tol=tol, what=f"scatter {dtype_name}")
        check_grad(lambda t, s, j: ember.index_add(t, 0, j, s, alpha=2), x,
                   make((3, 5), dtype_name, rng), idx([5, 1, 5]), tol=tol,
                   what=f"index_add {dtype_name}")
        check_grad(lambda t, j: ember.take(t, j), x, idx([[0, 29], [7, 7]]), tol=tol,
                   what=f"take {dtype_name}")
    w = make((10, 4), "float32", rng)
    check_grad(lambda t, i: ember.nn.functional.embedding(i, t), w, rand_idx(rng, 10, (3, 7)),
               what="embedding")
    check(lambda t, i: ember.nn.functional.embedding(i, t), w, idx([10]),
          what="embedding out of range")


# ---- scatter_reduce ------------------------------------------------------------------------------

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("dtype_name", ALL)
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce(dtype_name, reduce):
    rng = seeded("scatter_reduce", dtype_name, reduce)
    tol = ATOMIC_TOL.get(dtype_name)
    if reduce == "prod" and dtype_name in FLOATS:
        tol = (tol[0] * 4, tol[1] * 4)
    kw = {"lo": 0.5, "hi": 1.5} if reduce == "prod" and dtype_name in FLOATS else {}
    x = make((5, 6), dtype_name, rng, **kw)
    for include_self in (True, False):
        tag = f"{reduce} include_self={include_self} {dtype_name}"
        for dim in (0, 1, -1):
            shape = [7, 4] if dim == 0 else [3, 9]
            index = rand_idx(rng, x.shape[dim], tuple(shape))
            src = make(tuple(shape), dtype_name, rng, **kw)
            check(ember.scatter_reduce, x, dim, index, src, reduce, include_self=include_self,
                  tol=tol, what=f"{tag} dim {dim}")
        # src larger than index; a non-contiguous self; negative indices (allowed here)
        check(ember.scatter_reduce, x.t(), 1, rand_idx(rng, 5, (4, 3), low=-5),
              make((6, 8), dtype_name, rng, **kw), reduce, include_self=include_self, tol=tol,
              what=f"{tag} negative, transposed, src larger")
        check(ember.scatter_reduce, x, 0, idx(np.zeros((0, 6)), np.int64),
              make((2, 6), dtype_name, rng), reduce, include_self=include_self,
              what=f"{tag} empty index")
        check(ember.scatter_reduce, make((), dtype_name, rng), 0, idx(0), make((), dtype_name, rng),
              reduce, include_self=include_self, what=f"{tag} 0-d")
        check(ember.index_reduce, x, 0, rand_idx(rng, 5, (8,)), make((8, 6), dtype_name, rng, **kw),
              reduce if reduce != "sum" else "mean", include_self=include_self, tol=tol,
              what=f"{tag} index_reduce")
        check(ember.scatter_reduce, x, 0, idx([[5, 0]]), make((1, 2), dtype_name, rng), reduce,
              include_self=include_self, what=f"{tag} out of range")
        check(ember.scatter_reduce, x, 1, idx([[-7]]), make((1, 1), dtype_name, rng), reduce,
              include_self=include_self, what=f"{tag} negative out of range")
    big_n = 3000
    check(ember.scatter_reduce, make((50, 3), dtype_name, rng, **kw), 0,
          rand_idx(rng, 50, (big_n, 3)), make((big_n, 3), dtype_name, rng, **kw), reduce,
          tol=None if dtype_name not in FLOATS or reduce in ("amax", "amin") else
          (tol[0] * 20, tol[1] * 30), what=f"{reduce} {dtype_name} many duplicates")


def test_scatter_reduce_special_values_and_legacy():
    rng = seeded("scatter_reduce special")
    x = make((4, 16), "float32", rng, special=True)
    src = make((6, 16), "float32", rng, special=True).flip(1)
    index = rand_idx(rng, 4, (6, 16))
    for reduce in ("amax", "amin", "sum", "mean"):
        for include_self in (True, False):
            check(ember.scatter_reduce, x, 0, index, src, reduce, include_self=include_self,
                  what=f"{reduce} NaN/inf include_self={include_self}")
    for dtype_name in ("float32", "int32", "int64", "float16"):
        y = make((5, 4), dtype_name, rng)
        i = rand_idx(rng, 5, (3, 4))
        s = make((3, 4), dtype_name, rng)
        with pytest.warns(UserWarning):
            check(lambda t, j, v: ember.scatter(t, 0, j, v, reduce="add"), y, i, s,
                  tol=ATOMIC_TOL.get(dtype_name), what=f"scatter reduce=add {dtype_name}")
        check(lambda t, j: ember.scatter(t, 0, j, 2, reduce="multiply"), y, i,
              tol=ATOMIC_TOL.get(dtype_name), what=f"scatter value reduce=multiply {dtype_name}")
        check(lambda t, j: ember.scatter(t, 0, j, 2, reduce="multiply"), y, idx([[5]]),
              what=f"scatter reduce out of range {dtype_name}")


def test_operands_on_another_device_raise():
    skip_on_cpu("needs a second device")
    x = to_dev(ember.ones(3, 4))
    with pytest.raises(RuntimeError):
        ember.scatter_reduce(x, 0, idx([[0, 1]]), x[:1, :2], "sum")
    with pytest.raises(RuntimeError):
        ember.scatter_reduce(x, 0, to_dev(idx([[0, 1]])), ember.ones(1, 2), "amax")
    with pytest.raises(RuntimeError):
        ember.scatter(x, 0, to_dev(idx([[0, 1]])), ember.ones(1, 2))
    with pytest.raises(RuntimeError):
        ember.scatter_add(x, 0, to_dev(idx([[0, 1]])), ember.ones(1, 2))


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_grad(reduce):
    rng = seeded("scatter_reduce grad", reduce)
    for dtype_name in ("float32", "float64"):
        x = make((5, 6), dtype_name, rng, lo=0.5, hi=1.5)
        src = make((7, 6), dtype_name, rng, lo=0.5, hi=1.5)
        index = rand_idx(rng, 5, (7, 6))
        for include_self in (True, False):
            check_grad(lambda t, s, j: ember.scatter_reduce(t, 0, j, s, reduce,
                                                            include_self=include_self),
                       x, src, index, tol=(1e-4, 1e-5) if dtype_name == "float32" else None,
                       what=f"{reduce} {dtype_name} include_self={include_self}")


# ---- nonzero ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", ALL)
def test_nonzero(dtype_name):
    rng = seeded("nonzero", dtype_name)
    for shape in [(), (0,), (0, 3), (7,), (5, 7), (2, 3, 4, 5), (1, 1, 9)]:
        x = make(shape, dtype_name, rng, lo=-1, hi=1)
        if dtype_name != "bool" and x.numel():
            x = x * (make(shape, "bool", rng)).to(x.dtype)  # about half zeros
        check(ember.nonzero, x, what=f"nonzero {shape}")
        check(lambda t: ember.nonzero(t, as_tuple=True), x, what=f"as_tuple {shape}")
        check(ember.argwhere, x, what=f"argwhere {shape}")
    check(ember.nonzero, noncontig((6, 9), dtype_name, rng), what="non-contiguous")
    check(ember.nonzero, make((7, 6), dtype_name, rng).t(), what="transposed")
    check(ember.nonzero, ember.zeros(40, 50, dtype=dt(dtype_name)), what="all zeros")
    check(ember.nonzero, ember.ones(3, 5000, dtype=dt(dtype_name)), what="all ones, many tiles")
    # many tiles, sparse and irregular; a 0-d zero
    a = np.zeros(100_003)
    a[rng.integers(0, a.size, size=777)] = 1
    check(ember.nonzero, ember.from_numpy(a).to(dt(dtype_name)), what="sparse large 1-d")
    check(ember.nonzero, ember.from_numpy(a[:-3].reshape(100, 1000)).to(dt(dtype_name))[:, ::3],
          what="sparse large strided")
    check(ember.nonzero, ember.zeros((), dtype=dt(dtype_name)), what="0-d zero")
    if dtype_name in FLOATS:
        check(ember.nonzero, make((64,), dtype_name, rng, special=True), what="NaN, inf, -0.0")


# ---- flip / roll / repeat_interleave (index_remap) -------------------------------------------

@pytest.mark.parametrize("dtype_name", ALL)
def test_flip_roll_repeat_interleave(dtype_name):
    rng = seeded("remap", dtype_name)
    x = make((4, 5, 6), dtype_name, rng)
    nc = noncontig((4, 5, 6), dtype_name, rng)
    for t, desc in ((x, "contiguous"), (nc, "non-contiguous"), (x.transpose(0, 2), "transposed")):
        check(ember.flip, t, (0,), what=f"flip 0 {desc}")
        check(ember.flip, t, (0, 2), what=f"flip 0,2 {desc}")
        check(ember.flip, t, (-1, 1, 0), what=f"flip all {desc}")
        check(ember.roll, t, 2, 1, what=f"roll {desc}")
        check(ember.roll, t, (-3, 7), (0, 2), what=f"roll two dims {desc}")
        check(ember.roll, t, 11, what=f"roll flat {desc}")
        check(ember.repeat_interleave, t, 3, dim=1, what=f"repeat_interleave int {desc}")
        check(ember.repeat_interleave, t, idx([0, 2, 1, 3, 1]), dim=1,
              what=f"repeat_interleave tensor {desc}")
        check(ember.repeat_interleave, t, 2, what=f"repeat_interleave flat {desc}")
    check(ember.fliplr, x[0], what="fliplr")
    check(ember.flipud, x[0], what="flipud")
    check(ember.flip, make((), dtype_name, rng), (), what="flip 0-d")
    check(ember.flip, make((0, 3), dtype_name, rng), (1,), what="flip empty")
    check(ember.roll, make((0, 3), dtype_name, rng), 1, 1, what="roll empty")
    check(ember.repeat_interleave, make((), dtype_name, rng), 4, what="repeat_interleave 0-d")
    check(ember.repeat_interleave, x, 0, dim=0, what="repeat_interleave 0")
    big = make((3, 70000), dtype_name, rng)
    check(ember.flip, big, (1,), what="large flip")
    check(ember.roll, big, 12345, 1, what="large roll")


def test_remap_grad():
    rng = seeded("remap grad")
    for dtype_name in FLOATS:
        x = make((4, 5), dtype_name, rng)
        check_grad(lambda t: ember.flip(t, (0, 1)), x, what=f"flip {dtype_name}")
        check_grad(lambda t: ember.roll(t, (1, -2), (0, 1)), x, what=f"roll {dtype_name}")
        check_grad(lambda t, r: ember.repeat_interleave(t, r, dim=0), x, idx([1, 0, 3, 2]),
                   tol=ATOMIC_TOL[dtype_name], what=f"repeat_interleave {dtype_name}")


# ---- cumsum / cumprod / cummax / cummin ------------------------------------------------------------

SCAN_GEOMS = [((), 0), ((0,), 0), ((5, 0), 1), ((0, 4), 0), ((7,), 0), ((1, 1), 1),
              ((6, 33), 1), ((4, 37, 5), 0), ((4, 37, 5), 1), ((4, 37, 5), -1),
              ((3, 1500), 1), ((2, 3000), -1), ((1, 1025), 1), ((1500, 3), 0), ((300, 40), 1),
              ((20, 33000), 0)]


def _scan_inputs(shape, dtype_name, rng, **kw):
    yield "contiguous", make(shape, dtype_name, rng, **kw)
    if len(shape) >= 2 and all(s > 0 for s in shape):
        yield "transposed", make(shape[::-1], dtype_name, rng, **kw).permute(
            *reversed(range(len(shape))))
        yield "non-contiguous", noncontig(shape, dtype_name, rng, **kw)


SCAN_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-5),
            "float64": (1e-12, 1e-12)}


@pytest.mark.parametrize("dtype_name", ALL)
def test_cumsum_cumprod(dtype_name):
    rng = seeded("scan", dtype_name)
    tol = SCAN_TOL.get(dtype_name)
    for shape, dim in SCAN_GEOMS:
        for desc, x in _scan_inputs(shape, dtype_name, rng):
            check(ember.cumsum, x, dim, tol=tol, what=f"cumsum {shape} {dim} {desc}")
        for desc, x in _scan_inputs(shape, dtype_name, rng, lo=0.9, hi=1.1):
            if dtype_name in INTS:  # keep integer products small but non-trivial
                x = (x % 3).to(x.dtype) if dtype_name != "uint8" else x % 2
            check(ember.cumprod, x, dim, tol=tol, what=f"cumprod {shape} {dim} {desc}")
    x = make((5, 700), dtype_name, rng)
    if dtype_name != "bool":
        check(lambda t: ember.cumsum(t, 1, dtype=t.dtype), x, tol=tol, what="cumsum dtype=self")
        check(lambda t: t.clone().cumsum_(0), x, tol=tol, what="cumsum_")
    check(lambda t: ember.cumsum(t, 1, dtype=ember.float64), x, what="cumsum dtype=float64")
    check(lambda t: ember.cumsum(t, 1, out=ember.empty(0, dtype=ember.int64, device=t.device)),
          x, what="cumsum out=int64")
    if dtype_name in FLOATS:
        check(ember.cumsum, make((64,), dtype_name, rng, special=True), 0, what="cumsum special")
        check(ember.cumprod, make((64,), dtype_name, rng, special=True), 0, what="cumprod special")


def test_cumsum_integer_wraparound_and_accumulators():
    rng = seeded("scan wrap")
    big = ember.from_numpy(rng.integers(100, 127, size=(3, 2000)).astype(np.int8))
    check(lambda t: ember.cumsum(t, 1, dtype=ember.int8), big, what="int8 wraps")
    check(lambda t: ember.cumprod(t, 1, dtype=ember.int64), big, what="int64 product wraps")
    check(lambda t: ember.cumsum(t, 0, dtype=ember.int16), big, what="int16 columns")
    f = ember.from_numpy(rng.standard_normal((2, 5000)).astype(np.float32))
    check(ember.cumsum, f, 1, tol=(1e-5, 1e-4), what="float32 (double accumulator)")
    h = make((2, 3000), "float16", rng)
    check(ember.cumsum, h, 1, tol=(1e-2, 5e-2), what="float16 (float accumulator)")


def test_scan_grad():
    rng = seeded("scan grad")
    for dtype_name in ("float32", "float64"):
        x = make((4, 50), dtype_name, rng, lo=0.5, hi=1.5)
        for dim in (0, 1):
            check_grad(lambda t, d=dim: ember.cumsum(t, d), x, what=f"cumsum {dtype_name} {dim}")
            check_grad(lambda t, d=dim: ember.cumprod(t, d), x, tol=(1e-4, 1e-5),
                       what=f"cumprod {dtype_name} {dim}")
            check_grad(lambda t, d=dim: ember.cummax(t, d)[0], x, what=f"cummax {dim}")
            check_grad(lambda t, d=dim: ember.cummin(t, d)[0], x, what=f"cummin {dim}")


@pytest.mark.parametrize("dtype_name", ALL)
def test_cummax_cummin(dtype_name):
    rng = seeded("cummax", dtype_name)
    for shape, dim in SCAN_GEOMS:
        for desc, x in _scan_inputs(shape, dtype_name, rng):
            check(ember.cummax, x, dim, what=f"cummax {shape} {dim} {desc}")
            check(ember.cummin, x, dim, what=f"cummin {shape} {dim} {desc}")
    # ties everywhere (the later index wins)
    ties = ember.from_numpy(rng.integers(0, 2, size=(7, 2100))).to(dt(dtype_name))
    check(ember.cummax, ties, 1, what="ties long rows")
    check(ember.cummin, ties, 1, what="ties long rows")
    check(ember.cummax, ties[:, :40], 1, what="ties short rows")
    check(ember.cummin, ties.t(), 0, what="ties dim 0")
    if dtype_name in FLOATS:
        s = make((3, 1200), dtype_name, rng, special=True)  # NaN first, then inf, -inf, -0, 0
        check(ember.cummax, s, 1, what="NaN from the start")
        a = rng.standard_normal((4, 1500))
        a[1, 700] = a[1, 900] = np.nan
        a[2, 1499] = np.nan
        a[3, 20] = np.nan
        t = ember.from_numpy(a).to(dt(dtype_name))
        check(ember.cummax, t, 1, what="NaN inside long rows")
        check(ember.cummin, t, 1, what="NaN inside long rows")
        check(ember.cummin, t[:, :30], 1, what="NaN inside short rows")


@pytest.mark.parametrize("dtype_name", ["float32", "float16", "int64", "bool"])
def test_indexing_composites(dtype_name):
    rng = seeded("composites", dtype_name)
    tol = ATOMIC_TOL.get(dtype_name)
    x = make((4, 6), dtype_name, rng)
    s = make((7,), dtype_name, rng)
    check(lambda t, i, v: t.clone().put_(i, v, accumulate=True), x, idx([0, 23, 23, -1, 5, 0, 7]),
          s, tol=tol, what="put_ accumulate")
    check(lambda t, i, v: t.clone().put_(i, v), x, idx([3, 1, 8]), s[:3], what="put_")
    check(lambda t, i, v: t.clone().put_(i, v), x, idx([24]), s[:1], what="put_ out of range")
    check(lambda t, i: ember.take_along_dim(t, i, 1), x, rand_idx(rng, 6, (4, 9)),
          what="take_along_dim")
    fill = True if dtype_name == "bool" else 7
    check(lambda t, i: t.clone().index_fill_(1, i, fill), x, idx([0, 5, 2]), what="index_fill_")
    check(lambda t, i, v: t.clone().index_copy_(1, i, v), x, idx([4, 0]),
          make((4, 2), dtype_name, rng), what="index_copy_")
    check(lambda t, m, v: t.clone().masked_scatter_(m, v), x, make((4, 6), "bool", rng),
          make((24,), dtype_name, rng), what="masked_scatter_")
