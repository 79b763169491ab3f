"""Indexing: __getitem__/__setitem__ and the gather/scatter family, against NumPy.

PyTorch's indexing differs from NumPy's in one place: integers are applied as
basic indices (select) before the advanced ones, so `x[0, :, [1, 2]]` keeps the
advanced dim in place. `ref_getitem` below is NumPy with that rule.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

# ---- helpers -----------------------------------------------------------------------------


def T(a):
    """An ember tensor holding a copy of the NumPy array `a`."""
    return ember.from_numpy(np.array(a, copy=True))


def N(t):
    return t.numpy()


def to_ember_index(idx):
    """NumPy arrays in an index expression -> ember tensors (lists stay lists)."""
    conv = lambda i: T(i) if isinstance(i, np.ndarray) else i  # noqa: E731
    if isinstance(idx, tuple):
        return tuple(conv(i) for i in idx)
    return conv(idx)


def _as_tuple(idx):
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, list) and len(idx) < 32 and any(
        isinstance(e, (list, tuple, slice, np.ndarray)) or e is None or e is Ellipsis for e in idx
    ):
        return tuple(idx)
    return (idx,)


def _split(a_ndim, idx):
    """Splits an index into the basic part and (position, int array) advanced entries."""
    idx = _as_tuple(idx)
    norm = []
    for i in idx:
        if isinstance(i, (list, range)):
            i = np.array(list(i)) if len(i) else np.zeros(0, np.int64)
        norm.append(i)
    specified = 0
    for i in norm:
        if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype != np.bool_:
            specified += 1
        elif isinstance(i, np.ndarray):
            specified += i.ndim if i.dtype == np.bool_ else 1
        elif isinstance(i, (int, np.integer, slice)) and not isinstance(i, bool):
            specified += 1
    basic, adv, out = [], [], 0
    for i in norm:
        if i is None:
            basic.append(None)
            out += 1
        elif i is Ellipsis:
            basic.append(Ellipsis)
            out += a_ndim - specified
        elif isinstance(i, (bool, np.bool_)) or (isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype == np.bool_):
            basic.append(None)
            adv.append((out, np.zeros(1, np.int64) if bool(i) else np.zeros(0, np.int64)))
            out += 1
        elif isinstance(i, slice):
            basic.append(i)
            out += 1
        elif isinstance(i, np.ndarray) and i.ndim == 0:
            basic.append(int(i))
        elif isinstance(i, np.ndarray) and i.dtype == np.bool_:
            basic.extend([slice(None)] * i.ndim)
            for j, nz in enumerate(np.nonzero(i)):
                adv.append((out + j, nz))
            out += i.ndim
        elif isinstance(i, np.ndarray):
            basic.append(slice(None))
            adv.append((out, i.astype(np.int64)))
            out += 1
        else:
            basic.append(int(i))
    return tuple(basic), adv


def ref_getitem(a, idx):
    """(result, is_view) of PyTorch's a[idx], computed with NumPy."""
    basic, adv = _split(a.ndim, idx)
    if not any(i is Ellipsis for i in basic):
        basic = basic + (Ellipsis,)  # NumPy then returns 0-d views, not scalars
    b = a[basic]
    if not adv:
        return b, True
    full = [slice(None)] * b.ndim
    for p, arr in adv:
        full[p] = arr
    return b[tuple(full)], False


def ref_setitem(a, idx, value):
    basic, adv = _split(a.ndim, idx)
    if not any(i is Ellipsis for i in basic):
        basic = basic + (Ellipsis,)
    b = a[basic]
    if not adv:
        b[...] = value
        return
    full = [slice(None)] * b.ndim
    for p, arr in adv:
        full[p] = arr
    b[tuple(full)] = value


def check_getitem(a, idx):
    x = T(a)
    expected, is_view = ref_getitem(a, idx)
    r = x[to_ember_index(idx)]
    assert tuple(r.shape) == expected.shape, (idx, tuple(r.shape), expected.shape)
    np.testing.assert_array_equal(N(r), expected)
    assert r.dtype == x.dtype
    if is_view:
        assert r._storage_ptr() == x._storage_ptr(), idx
        if expected.size:
            # Same element offset and strides as NumPy's view.
            base = a.__array_interface__["data"][0]
            exp_b, _ = ref_getitem(a, idx)
            assert r.data_ptr() - x.data_ptr() == exp_b.__array_interface__["data"][0] - base
            its = a.itemsize
            for d in range(exp_b.ndim):
                if exp_b.shape[d] > 1:
                    assert r.stride(d) * its == exp_b.strides[d], (idx, d)
    else:
        assert r._storage_ptr() != x._storage_ptr(), idx
        assert r.is_contiguous()


A3 = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
A2 = np.arange(20, dtype=np.int64).reshape(4, 5)
B3 = A3 > 7
GETITEM_CASES = [
    # basic
    0, -1, 1, (1, 2), (1, 2, 3), (-1, -1, -1), (0, slice(None), 2),
    slice(None), slice(1, None), slice(None, None, 2), slice(-5, 5), slice(5, 10), slice(0, 0),
    (slice(None), slice(1, 3)), (slice(None), slice(None, None, 2), slice(1, None, 3)),
    None, (None, 0), (0, None, 1), (None, None, Ellipsis, None), Ellipsis, (Ellipsis, 1),
    (1, Ellipsis), (Ellipsis, None), (0, Ellipsis, 0), (slice(None), Ellipsis, slice(1, 2), None),
    (Ellipsis, 0, 0, 0), np.int64(1), (np.int32(-1), slice(None)),
    # bools
    True, False, (0, True), (Ellipsis, False), (True, 1),
    # 0-d tensors
    np.array(1), (np.array(-1), np.array(2)), np.array(True), np.array(False),
    # integer tensors and lists
    np.array([0, 1, 1, 0]), np.array([[1, 0], [0, 1]]), [1, 0], [-1], [[0, 1], [2, 0]],
    (slice(None), np.array([2, 0])), (slice(None), slice(None), [3, 1, -4]),
    (np.array([0, 1]), np.array([2, 1])), (np.array([[0], [1]]), np.array([0, 2, 1])),
    (np.array([0, 1]), slice(None), np.array([3, 2])),          # separated -> front
    (slice(None), np.array([0, 2]), np.array([1, 3])),          # adjacent -> in place
    (np.array([1]), slice(1, 3), np.array([[0], [3]])),
    (None, np.array([0, 1]), None, np.array([1, 2])),
    (0, slice(None), np.array([1, 2])),                        # int applied first (PyTorch)
    (np.array([1, 0]), 1, np.array([0, 0])),
    (Ellipsis, np.array([0, 3])), (np.array([1, 1]), Ellipsis), (Ellipsis, np.array([2]), slice(None)),
    (np.zeros(0, np.int64),), (slice(None), np.zeros((0, 2), np.int64)),
    (np.array([0, 1]), True), (True, np.array([[1], [0]])),
    range(2), (slice(None), range(1, 3), 0),
    # masks
    B3, B3[:, :, 0], (slice(None), B3[0, :, 0]), (B3[:, :, 1], slice(None)), (1, B3[0, :, 0]),
    (Ellipsis, B3[0, 0]), np.zeros((2, 3, 4), bool), (B3[:, :, 0], 2), [True, False],
    (np.array([True, False]), slice(None), np.array([0, 3])),
]


@pytest.mark.parametrize("idx", GETITEM_CASES, ids=[repr(i)[:40] for i in GETITEM_CASES])
def test_getitem_table(idx):
    check_getitem(A3, idx)


@pytest.mark.parametrize("idx", [
    0, (1, 2), slice(None, None, 3), (slice(1, None), np.array([4, 0])), np.array([3, 3, 0]),
    (A2 % 3 == 0), (np.array([[0, 1]]), np.array([[1], [2]])), (Ellipsis, None, -1),
])
def test_getitem_int64_2d(idx):
    check_getitem(A2, idx)


def test_getitem_non_contiguous_input_and_index():
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    x = T(a).permute(2, 0, 1)[::2]           # non-contiguous view
    an = a.transpose(2, 0, 1)[::2]
    idx = T(np.array([[0, 2, 1, 1], [2, 0, 0, 2]]))[:, ::2]  # non-contiguous index
    np.testing.assert_array_equal(N(x[:, idx.t()]), an[:, np.array([[0, 2], [1, 0]])])
    np.testing.assert_array_equal(N(x[1, :, idx[0]]), an[1][:, [0, 1]])
    m = x > 20
    np.testing.assert_array_equal(N(x[m]), an[an > 20])
    e = T(np.array([1, 2])).expand(3, 2)     # broadcast (stride-0) index
    np.testing.assert_array_equal(N(x[0, e]), an[0][np.array([[1, 2]] * 3)])


def test_getitem_0d_and_empty():
    s = T(np.array(5.0, np.float32))
    assert N(s[...]) == 5.0 and s[...]._storage_ptr() == s._storage_ptr()
    assert tuple(s[None].shape) == (1,)
    assert tuple(s[True].shape) == (1,) and tuple(s[False].shape) == (0,)
    assert tuple(s[None, ..., None].shape) == (1, 1)
    m = T(np.array(True))
    np.testing.assert_array_equal(N(s[m]), np.array([5.0], np.float32))
    e = T(np.zeros((0, 3), np.float32))
    assert tuple(e[:, 1].shape) == (0,)
    assert tuple(e[T(np.zeros(0, np.int64))].shape) == (0, 3)
    assert tuple(e[:, [0, 2]].shape) == (0, 2)
    assert tuple(e[e > 0].shape) == (0,)


def test_getitem_dtypes():
    for dt in [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]:
        a = (np.arange(12) % 5).astype(dt).reshape(3, 4)
        check_getitem(a, (np.array([2, 0]), slice(1, None)))
        check_getitem(a, a.astype(bool))
    x = T(np.arange(6, dtype=np.float32).reshape(2, 3)).to(ember.bfloat16)
    r = x[[1, 0], 1:]
    assert r.dtype == ember.bfloat16
    np.testing.assert_array_equal(N(r.to(ember.float32)), np.array([[4, 5], [1, 2]], np.float32))


def test_index_with_int32_and_uint8_tensors():
    a = A2.copy()
    x = T(a)
    np.testing.assert_array_equal(N(x[T(np.array([3, 0], np.int32))]), a[[3, 0]])
    m = (a % 2).astype(np.uint8)  # uint8 tensors are masks, as in PyTorch
    np.testing.assert_array_equal(N(x[T(m)]), a[m.astype(bool)])
    np.testing.assert_array_equal(N(x[np.array([1, 3], np.int16)]), a[[1, 3]])


# ---- hypothesis: random basic + advanced indices --------------------------------------------

@st.composite
def index_and_array(draw):
    """An array and a valid index: one item per dim (maybe an Ellipsis for a run
    of them, maybe fewer trailing ones), with Nones sprinkled in."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    items = []
    for size in shape:
        k = draw(st.sampled_from(["int", "slice", "intarr", "boolarr", "full"]))
        if k == "int" and size > 0:
            items.append(draw(st.integers(-size, size - 1)))
        elif k == "slice":
            start = draw(st.one_of(st.none(), st.integers(-6, 6)))
            stop = draw(st.one_of(st.none(), st.integers(-6, 6)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            items.append(slice(start, stop, step))
        elif k == "intarr":
            ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
            if size == 0:
                items.append(np.zeros((0,), np.int64))
            else:
                n = int(np.prod(ishape))
                vals = draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n))
                items.append(np.array(vals, np.int64).reshape(ishape))
        elif k == "boolarr":
            vals = draw(st.lists(st.booleans(), min_size=size, max_size=size))
            items.append(np.array(vals, bool).reshape(size))
        else:
            items.append(slice(None))
    if items and draw(st.booleans()):
        i = draw(st.integers(0, len(items)))
        j = draw(st.integers(i, len(items)))
        items[i:j] = [Ellipsis]
    else:
        items = items[: draw(st.integers(0, len(items)))]
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    return a, tuple(items)


@settings(max_examples=150, deadline=None)
@given(index_and_array())
def test_getitem_hypothesis(case):
    a, idx = case
    try:
        expected, _ = ref_getitem(a, idx)
    except (IndexError, ValueError):  # index arrays that do not broadcast together
        with pytest.raises(IndexError):
            T(a)[to_ember_index(idx)]
        return
    check_getitem(a, idx)


@settings(max_examples=100, deadline=None)
@given(index_and_array())
def test_setitem_hypothesis(case):
    a, idx = case
    try:
        region, _ = ref_getitem(a, idx)
    except (IndexError, ValueError):
        return
    b = a.copy()
    value = np.arange(region.size, dtype=np.int32).reshape(region.shape) + 100
    ref_setitem(b, idx, value)
    x = T(a)
    x[to_ember_index(idx)] = T(value)
    np.testing.assert_array_equal(N(x), b)


# ---- setitem -----------------------------------------------------------------------------------

SETITEM_CASES = [
    0, (1, 2), (slice(None), 1), (Ellipsis, slice(1, 3)), (None, 1), slice(None, None, 2),
    np.array([1, 0]), [0], (slice(None), np.array([2, 0]), np.array([1, 3])),
    (np.array([0, 1]), slice(None), np.array([3, 2])), (0, slice(None), [1, 2]), B3, (B3[:, :, 0],),
    True, (0, False), np.array(1),
]


@pytest.mark.parametrize("idx", SETITEM_CASES, ids=[repr(i)[:40] for i in SETITEM_CASES])
def test_setitem_scalar_and_tensor(idx):
    a = A3.copy()
    x = T(a)
    v0 = x._version
    x[to_ember_index(idx)] = -7
    ref_setitem(a, idx, -7)
    np.testing.assert_array_equal(N(x), a)
    assert x._version > v0
    region, _ = ref_getitem(a, idx)
    val = np.arange(region.size, dtype=np.float64).reshape(region.shape) * 0.5  # dtype converted
    x[to_ember_index(idx)] = T(val)
    ref_setitem(a, idx, val.astype(np.float32))
    np.testing.assert_array_equal(N(x), a)


def test_setitem_broadcast_and_leading_ones():
    a = A3.copy()
    x = T(a)
    x[0] = T(np.array([[1, 2, 3, 4]], np.float32))          # broadcast along dim 0
    x[1, 1] = T(np.ones((1, 1, 4), np.float32) * 9)          # leading 1s dropped
    x[:, [0, 2]] = T(np.array([5, 6, 7, 8], np.float32))     # advanced + broadcast
    a[0] = [1, 2, 3, 4]
    a[1, 1] = 9
    a[:, [0, 2]] = [5, 6, 7, 8]
    np.testing.assert_array_equal(N(x), a)
    x[x > 6] = 0
    a[a > 6] = 0
    np.testing.assert_array_equal(N(x), a)
    x[x == 0] = T(np.array(3.5, np.float32))
    a[a == 0] = 3.5
    np.testing.assert_array_equal(N(x), a)
    i = T(np.arange(4, dtype=np.int64).reshape(2, 2))
    i[0] = 1.9      # float into an int tensor truncates, as in PyTorch
    i[1, 0] = True
    np.testing.assert_array_equal(N(i), [[1, 1], [1, 3]])


def test_setitem_self_aliasing():
    a = np.arange(6, dtype=np.float32)
    x = T(a)
    x[[1, 2, 3, 4, 5]] = x[[0, 1, 2, 3, 4]]
    np.testing.assert_array_equal(N(x), [0, 0, 1, 2, 3, 4])
    x = T(a)
    x[1:] = x[:-1]                  # overlapping basic copy
    np.testing.assert_array_equal(N(x), [0, 0, 1, 2, 3, 4])
    x = T(a)
    x[T(np.array([5, 4, 3, 2, 1, 0]))] = x  # whole-tensor self-assignment through a permutation
    np.testing.assert_array_equal(N(x), a[::-1])
    x = T(np.arange(4, dtype=np.int64))
    x[x] = x.flip(0) if hasattr(x, "flip") else T(np.array([3, 2, 1, 0]))
    np.testing.assert_array_equal(N(x), [3, 2, 1, 0])


def test_setitem_non_contiguous_target_and_value():
    a = np.zeros((4, 6), np.float32)
    x = T(a)
    xt = x.t()                               # view: writes go through to x
    v = T(np.arange(24, dtype=np.float32).reshape(4, 6)).t()
    xt[::2, [0, 3]] = v[::2, [1, 2]]
    a.T[::2, [0, 3]] = np.arange(24, dtype=np.float32).reshape(4, 6).T[::2][:, [1, 2]]
    np.testing.assert_array_equal(N(x), a)


def test_setitem_view_write_through_and_version():
    x = T(np.zeros((3, 3), np.float32))
    row = x[1]
    v0 = row._version
    x[1, [0, 2]] = 4.0
    assert row._version > v0
    np.testing.assert_array_equal(N(row), [4, 0, 4])


# ---- functions ---------------------------------------------------------------------------------

def test_index_select():
    a = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    x = T(a)
    for dim in range(3):
        idx = np.array([0, 2, 2, 1])[: a.shape[dim]] % a.shape[dim]
        np.testing.assert_array_equal(N(x.index_select(dim, T(idx))), np.take(a, idx, axis=dim))
        np.testing.assert_array_equal(N(ember.index_select(x, dim - 3, T(idx.astype(np.int32)))),
                                      np.take(a, idx, axis=dim))
    xt = x.permute(2, 0, 1)
    np.testing.assert_array_equal(N(xt.index_select(0, T(np.array([4, 0])))), a.transpose(2, 0, 1)[[4, 0]])
    assert tuple(x.index_select(1, T(np.array(2))).shape) == (3, 1, 5)  # 0-d index
    assert tuple(x.index_select(1, T(np.zeros(0, np.int64))).shape) == (3, 0, 5)
    s = T(np.array(3.0))
    assert float(s.index_select(0, T(np.array([0])))) == 3.0


def _take_along(a, idx, dim):
    sl = tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(idx.shape))
    return np.take_along_axis(a[sl], idx, axis=dim)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_, np.float16])
def test_gather(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 4, 5)) * 4).astype(dtype)
    x = T(a)
    for dim in range(3):
        ishape = list(a.shape)
        ishape[0] = 2
        ishape[dim] = 6
        idx = rng.integers(0, a.shape[dim], ishape)
        np.testing.assert_array_equal(N(x.gather(dim, T(idx))), _take_along(a, idx, dim))
        np.testing.assert_array_equal(N(ember.gather(x, dim, T(idx))), _take_along(a, idx, dim))
    # non-contiguous input and index
    xt, at = x.transpose(0, 2), a.transpose(2, 1, 0)
    idx = rng.integers(0, 5, (4, 4, 6))
    it = T(idx)[:, :, ::2]
    np.testing.assert_array_equal(N(xt.gather(0, it)), _take_along(at, idx[:, :, ::2], 0))
    s = T(np.array(2.5))
    assert float(s.gather(0, T(np.array(0)))) == 2.5
    assert tuple(x.gather(1, T(np.zeros((3, 0, 5), np.int64))).shape) == (3, 0, 5)


def test_scatter_and_scatter_add():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    src = rng.standard_normal((3, 5)).astype(np.float32)
    idx = np.stack([rng.permutation(4)[:3] for _ in range(5)], axis=1)  # no duplicates per column
    exp = a.copy()
    np.put_along_axis(exp, idx, src, axis=0)
    x = T(a)
    np.testing.assert_array_equal(N(x.scatter(0, T(idx), T(src))), exp)
    np.testing.assert_array_equal(N(x), a)  # out of place
    v0 = x._version
    r = x.scatter_(0, T(idx), T(src))
    assert r is x and x._version > v0
    np.testing.assert_array_equal(N(x), exp)
    # value
    exp2 = a.copy()
    np.put_along_axis(exp2, idx, 7.0, axis=0)
    np.testing.assert_array_equal(N(ember.scatter(T(a), 0, T(idx), value=7.0)), exp2)
    np.testing.assert_array_equal(N(T(a).scatter(0, T(idx), 7.0)), exp2)
    # scatter_add with duplicates, dim 1, src larger than index
    idx2 = rng.integers(0, 5, (4, 7))
    src2 = rng.standard_normal((4, 9)).astype(np.float64)
    exp3 = a.astype(np.float64)
    rows = np.repeat(np.arange(4)[:, None], 7, axis=1)
    np.add.at(exp3, (rows, idx2), src2[:, :7])
    got = T(a.astype(np.float64)).scatter_add(1, T(idx2), T(src2))
    np.testing.assert_allclose(N(got), exp3, rtol=1e-12)
    y = T(a.astype(np.float64))
    assert y.scatter_add_(1, T(idx2), T(src2)) is y
    np.testing.assert_allclose(N(y), exp3, rtol=1e-12)
    with pytest.warns(UserWarning, match="reduce argument of ember.scatter with Tensor src is deprecated"):
        z = T(np.zeros(3, np.int64)).scatter(0, T(np.array([0, 0, 2])), T(np.array([1, 1, 1])), reduce="add")
    np.testing.assert_array_equal(N(z), [2, 0, 1])


def test_index_put_accumulate_duplicates():
    rng = np.random.default_rng(3)
    for dt in [np.float32, np.float64, np.int64, np.int32, np.float16]:
        a = (rng.standard_normal((5, 3)) * 3).astype(dt)
        rows = np.array([0, 4, 0, 0, 2, 4])
        vals = (rng.standard_normal((6, 3)) * 3).astype(dt)
        exp = a.copy()
        np.add.at(exp, rows, vals)
        x = T(a)
        assert x.index_put_((T(rows),), T(vals), accumulate=True) is x
        np.testing.assert_allclose(N(x).astype(np.float64), exp.astype(np.float64), rtol=1e-2 if dt == np.float16 else 1e-6)
    a = np.zeros((3, 4), np.float32)
    exp = a.copy()
    i, j = np.array([0, 0, 2, 0]), np.array([1, 1, 3, 1])
    np.add.at(exp, (i, j), 1.5)
    got = ember.index_put(T(a), (T(i), T(j)), T(np.array(1.5, np.float32)), accumulate=True)
    np.testing.assert_array_equal(N(got), exp)
    got = T(a).index_put((None, T(np.array([3, 3]))), T(np.array([[1.0]], np.float32)), True)
    np.testing.assert_array_equal(N(got)[:, 3], [2, 2, 2])
    m = T(np.array([[True, False, True, False]] * 3))
    got = T(a).index_put_((m,), T(np.array(2.0, np.float32)))  # bool-mask index_put_
    np.testing.assert_array_equal(N(got), np.where(N(m), 2.0, 0.0))


def test_index_add():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3, 2)).astype(np.float32)
    for dim in range(3):
        n = 5
        idx = rng.integers(0, a.shape[dim], n)
        sshape = list(a.shape)
        sshape[dim] = n
        src = rng.standard_normal(sshape).astype(np.float32)
        exp = a.copy()
        sl = [slice(None)] * 3
        for k in range(n):
            sl_dst = list(sl)
            sl_dst[dim] = idx[k]
            sl_src = list(sl)
            sl_src[dim] = k
            exp[tuple(sl_dst)] += 2.0 * src[tuple(sl_src)]
        np.testing.assert_allclose(N(T(a).index_add(dim, T(idx), T(src), alpha=2)), exp, rtol=1e-5)
        y = T(a)
        assert y.index_add_(dim, T(idx.astype(np.int32)), T(src), alpha=2.0) is y
        np.testing.assert_allclose(N(y), exp, rtol=1e-5)
    x = T(np.zeros(3, np.int64))
    ember.index_add(x, 0, T(np.array([1, 1])), T(np.array([2, 3])))
    np.testing.assert_array_equal(N(x.index_add(0, T(np.array([1, 1])), T(np.array([2, 3])))), [0, 5, 0])


def test_masked_fill_and_select():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    mask = rng.random(4) > 0.5                                  # broadcasts over rows
    x = T(a)
    np.testing.assert_array_equal(N(x.masked_fill(T(mask), -1.0)), np.where(mask, -1.0, a).astype(np.float32))
    np.testing.assert_array_equal(N(ember.masked_fill(x, T(mask), T(np.array(2.0)))), np.where(mask, 2.0, a).astype(np.float32))
    y = T(a)
    v0 = y._version
    assert y.masked_fill_(T(mask), 5) is y and y._version > v0
    np.testing.assert_array_equal(N(y), np.where(mask, 5, a).astype(np.float32))
    # out of place broadcasts self against the mask
    big = rng.random((2, 3, 4)) > 0.5
    np.testing.assert_array_equal(N(x.masked_fill(T(big), 0.0)), np.where(big, 0, a).astype(np.float32))
    # non-contiguous self
    z = T(a).t()
    z.masked_fill_(T(rng.random((4, 3)) > 2), 1.0)  # no-op mask
    np.testing.assert_array_equal(N(z), a.T)
    # masked_select broadcasts both
    np.testing.assert_array_equal(N(x.masked_select(T(mask))), np.broadcast_to(a, (3, 4))[np.broadcast_to(mask, (3, 4))])
    np.testing.assert_array_equal(N(ember.masked_select(x[0], T(big))), np.broadcast_to(a[0], big.shape)[big])
    s = T(np.array(3.0, np.float32))
    assert N(s.masked_select(T(np.array(True)))).tolist() == [3.0]
    assert tuple(T(np.zeros((0, 4), np.float32)).masked_select(T(mask)).shape) == (0,)
    b = T(np.array([True, False, True]))
    np.testing.assert_array_equal(N(b.masked_fill(b, False)), [False, False, False])


def test_take():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = T(a)
    idx = np.array([[0, -1], [5, 11]])
    np.testing.assert_array_equal(N(x.take(T(idx))), np.take(a, idx))
    np.testing.assert_array_equal(N(ember.take(x.t(), T(idx))), np.take(a.T, idx))
    assert tuple(x.take(T(np.zeros((2, 0), np.int64))).shape) == (2, 0)
    assert float(x.take(T(np.array(5)))) == 5.0


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16, np.uint8])
def test_nonzero_argwhere_where(dtype):
    rng = np.random.default_rng(6)
    a = (rng.random((3, 4, 2)) > 0.6).astype(dtype) * (2 if dtype != np.bool_ else 1)
    x = T(a)
    np.testing.assert_array_equal(N(x.nonzero()), np.argwhere(a))
    np.testing.assert_array_equal(N(ember.argwhere(x)), np.argwhere(a))
    assert x.nonzero().dtype == ember.int64
    for got, exp in zip(ember.nonzero(x, as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(N(got), exp)
    w = ember.where(x.permute(2, 0, 1))
    for got, exp in zip(w, np.nonzero(a.transpose(2, 0, 1))):
        np.testing.assert_array_equal(N(got), exp)


def test_nonzero_edge_cases():
    assert tuple(T(np.array(3.0)).nonzero().shape) == (1, 0)
    assert tuple(T(np.array(0.0)).nonzero().shape) == (0, 0)
    (t,) = T(np.array(3.0)).nonzero(as_tuple=True)
    assert N(t).tolist() == [0]
    assert tuple(T(np.zeros((0, 3))).nonzero().shape) == (0, 2)
    f = T(np.array([0.0, np.nan, -0.0, 1e-30]))
    assert N(f.nonzero()).ravel().tolist() == [1, 3]
    bf = T(np.array([0.0, 1.0, 0.0], np.float32)).to(ember.bfloat16)
    assert N(bf.nonzero()).ravel().tolist() == [1]


def test_large_gather_parallel_path():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    idx = rng.integers(-300, 300, 200000)
    np.testing.assert_array_equal(N(T(a)[T(idx), 3]), a[idx, 3])
    np.testing.assert_array_equal(N(T(a).index_select(0, T(idx % 300))[:, :5]), a[idx % 300, :5])


# ---- errors ----------------------------------------------------------------------------------

def test_getitem_errors():
    x = T(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for dimension 0 with size 2"):
        x[5]
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for dimension 0 with size 3"):
        x[0, -4]
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2"):
        x[T(np.zeros((2, 3, 1), bool))]
    with pytest.raises(ValueError, match=r"step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match=r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or "
                                         r"byte Variables are valid indices \(got float\)"):
        x[1.5]
    with pytest.raises(IndexError, match=r"\(got str\)"):
        x["a"]
    with pytest.raises(IndexError, match=r"\(got float\)"):
        x[[0.5, 1.0]]
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for dimension 0 with size 2"):
        x[[0, 7]]
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for dimension 1 with size 3"):
        x[:, T(np.array([-4]))]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match the shape of "
                                         r"the indexed tensor \[2, 3\] at index 0"):
        x[T(np.array([True, False, True]))]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together "
                                         r"with shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"tensors used as indices must be long, int, byte or bool tensors"):
        x[T(np.array([0.0]))]
    with pytest.raises(IndexError, match=r"tensors used as indices must be long, int, byte or bool tensors"):
        x[np.array([0.0])]
    with pytest.raises(IndexError, match=r"invalid index of a 0-dim tensor"):
        T(np.array(1.0))[0]
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 0"):
        T(np.array(1.0))[0, ]
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 3\)"):
        x[[[[0, 1], [0, 1, 1]]]]  # a list holding a list is read as a tuple (PyTorch)
    with pytest.raises(TypeError, match=r"slice indices must be integers"):
        x[0.5:]


def test_setitem_errors():
    x = T(np.zeros((2, 3), np.float32))
    before = N(x).copy()
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 2"):
        x[[0, 3]] = 1.0
    with pytest.raises(IndexError, match=r"index 9 is out of bounds for dimension 1 with size 3"):
        x[[0, 1], [1, 9]] = T(np.ones(2, np.float32))
    np.testing.assert_array_equal(N(x), before)  # nothing written by a failed assignment
    with pytest.raises(TypeError, match=r"can't assign a list to a ember.FloatTensor"):
        x[0] = [1, 2, 3]
    with pytest.raises(TypeError, match=r"can't assign a str"):
        x[0] = "a"
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[4\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 3\]"):
        x[[0, 1]] = T(np.ones(4, np.float32))
    with pytest.raises(RuntimeError, match=r"must match the existing size"):
        x[0] = T(np.ones(4, np.float32))
    with pytest.raises(RuntimeError, match=r"more than one element of the written-to tensor"):
        e = T(np.zeros(3, np.float32)).expand(2, 3)
        e[[0]] = 1.0


def test_function_errors():
    x = T(np.zeros((3, 3), np.float32))
    i64 = T(np.array([[0, 7]]))
    with pytest.raises(RuntimeError, match=r"index 7 is out of bounds for dimension 1 with size 3"):
        x.gather(1, i64)
    with pytest.raises(RuntimeError, match=r"index -1 is out of bounds for dimension 0 with size 3"):
        x.gather(0, T(np.array([[-1]])))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int64 for index"):
        x.gather(0, T(np.array([[0]], np.int32)))
    with pytest.raises(RuntimeError, match=r"Index tensor must have the same number of dimensions as input tensor"):
        x.gather(0, T(np.array([0])))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 1 expected index \[1, 4\] to be "
                                           r"smaller than self \[3, 3\] apart from dimension 0"):
        x.gather(0, T(np.zeros((1, 4), np.int64)))
    with pytest.raises(RuntimeError, match=r"index 7 is out of bounds for dimension 1 with size 3"):
        x.scatter_(1, i64, T(np.ones((1, 2), np.float32)))
    np.testing.assert_array_equal(N(x), np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 2\] to be smaller than self \[3, 3\] apart from "
                                           r"dimension 1 and to be smaller size than src \[1, 1\]"):
        x.scatter_(1, T(np.array([[0, 1]])), T(np.ones((1, 1), np.float32)))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, T(np.array([[0]])), T(np.ones((1, 1), np.float64)))
    with pytest.raises(RuntimeError, match=r"scatter_add\(\): Expected dtype int64 for index"):
        x.scatter_add(1, T(np.array([[0.0]])), T(np.ones((1, 1), np.float32)))
    with pytest.raises(IndexError, match=r"index out of range in self"):
        x.index_select(0, T(np.array([3])))
    with pytest.raises(IndexError, match=r"index out of range in self"):
        x.index_select(0, T(np.array([-1])))
    with pytest.raises(IndexError, match=r"index_select\(\): Index is supposed to be a vector"):
        x.index_select(0, T(np.zeros((1, 1), np.int64)))
    with pytest.raises(RuntimeError, match=r"index_select\(\): Expected dtype int32 or int64 for index"):
        x.index_select(0, T(np.array([0.0])))
    with pytest.raises(IndexError, match=r"Dimension out of range|out of range"):
        x.index_select(2, T(np.array([0])))
    with pytest.raises(IndexError, match=r"index out of range in self"):
        x.index_add_(0, T(np.array([5])), T(np.ones((1, 3), np.float32)))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Number of indices \(2\) should be equal to "
                                           r"source.size\(dim\) \(1\)"):
        x.index_add_(0, T(np.array([0, 1])), T(np.ones((1, 3), np.float32)))
    with pytest.raises(RuntimeError, match=r"must have the same scalar type"):
        x.index_add_(0, T(np.array([0])), T(np.ones((1, 3), np.float64)))
    with pytest.raises(RuntimeError, match=r"For integral input tensors, argument alpha must not be a floating"):
        T(np.zeros(3, np.int64)).index_add_(0, T(np.array([0])), T(np.ones(1, np.int64)), alpha=0.5)
    with pytest.raises(RuntimeError, match=r"masked_fill_ only supports boolean masks, but got mask with dtype int64"):
        x.masked_fill_(T(np.array([1, 0, 1])), 1.0)
    with pytest.raises(RuntimeError, match=r"masked_fill_ only supports a 0-dimensional value tensor, but got "
                                           r"tensor with 1 dimension\(s\)"):
        x.masked_fill(T(np.array([True, False, True])), T(np.ones(1, np.float32)))
    with pytest.raises(RuntimeError, match=r"expanded size"):
        x.masked_fill_(T(np.ones((2, 3), bool)), 1.0)
    with pytest.raises(RuntimeError, match=r"masked_select: expected BoolTensor for mask"):
        x.masked_select(T(np.ones(3, np.int64)))
    with pytest.raises(IndexError, match=r"out of range: tried to access index 9 on a tensor of 9 elements"):
        x.take(T(np.array([9])))
    with pytest.raises(IndexError, match=r"out of range: tried to access index -10 on a tensor of 9 elements"):
        x.take(T(np.array([-10])))
    with pytest.raises(RuntimeError, match=r"Index put requires the source and destination dtypes match, got "
                                           r"float32 for the destination and int64 for the source"):
        x.index_put_((T(np.array([0])),), T(np.array([1])))
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((T(np.array([3])),), T(np.array(1.0, np.float32)), accumulate=True)
    with pytest.raises(TypeError, match=r"index_put_\(\): argument 'indices' must be tuple of Tensors"):
        x.index_put_(T(np.array([0])), T(np.array(1.0, np.float32)))
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        x.index_put_((T(np.array([0])),) * 3, T(np.array(1.0, np.float32)))
    np.testing.assert_array_equal(N(x), np.zeros((3, 3)))


def test_row_gather_and_large_errors():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((50, 700)).astype(np.float32)
    idx = rng.integers(-50, 50, 300)
    np.testing.assert_array_equal(N(T(a)[T(idx)]), a[idx])                 # contiguous rows
    np.testing.assert_array_equal(N(T(a)[:, ::3][T(idx)]), a[:, ::3][idx])  # strided rows
    big = rng.integers(0, 50, 100000)
    big[77777] = 50
    x = T(a)
    with pytest.raises(IndexError, match=r"index 50 is out of bounds for dimension 0 with size 50"):
        x[T(big), 0] = 1.0
    np.testing.assert_array_equal(N(x), a)


def test_index_sharing_storage_with_self():
    x = T(np.array([2, 0, 1, 0], np.int64))
    x.scatter_(0, x[:3], T(np.array([7, 8, 9], np.int64)))
    np.testing.assert_array_equal(N(x), [8, 9, 7, 0])
    y = T(np.array([1, 0, 0], np.int64))
    y.index_add_(0, y[:2], T(np.array([10, 20], np.int64)))
    np.testing.assert_array_equal(N(y), [21, 10, 0])
    z = T(np.array([2, 0, 1], np.int64))
    z[z] = T(np.array([5, 6, 7], np.int64))
    np.testing.assert_array_equal(N(z), [6, 7, 5])
