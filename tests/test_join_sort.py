"""Joining (cat/stack/...), rearranging (flip/roll/repeat/...) and sorting
(sort/topk/unique/searchsorted/...) ops, checked against NumPy."""
import numpy as np
import pytest

import ember

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
NUMERIC = [d for d in ALL if d != "bool"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def make(shape, dtype, rng, low=-50, high=50):
    """A NumPy array exactly representable in `dtype` and the matching ember tensor."""
    if dtype == "bool":
        a = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype == "uint8":
        a = rng.integers(0, 100, size=shape).astype(np.uint8)
    elif dtype in FLOATS:
        a = (rng.integers(low, high, size=shape) / 4).astype(np.float32)
    else:
        a = rng.integers(low, high, size=shape).astype(dtype)
    return a, E(a, dtype)


def E(a, dtype=None):
    a = np.asarray(a)
    if dtype == "bfloat16":
        a, dtype = a.astype(np.float32), "bfloat16"
    t = ember.tensor(a.reshape(-1)).reshape(a.shape)  # (goes through 1-d for 0-d arrays)
    return t.to(getattr(ember, dtype)) if dtype else t


def N(t):
    if t.dtype == ember.bfloat16:
        t = t.to(ember.float32)
    return t.numpy()


def check(t, expected, dtype=None):
    got = N(t)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype is not None:
        assert t.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


def strided(t):
    """A non-contiguous view of `t` (every other element of a twice-as-large tensor)."""
    shape = list(t.shape)
    big = ember.zeros([2 * s for s in shape] if shape else [], dtype=t.dtype)
    if not shape:
        return t
    view = big.as_strided(shape, [2 * s for s in big.stride()])
    view.copy_(t)
    assert not view.is_contiguous() or t.numel() <= 1
    return view


# ---- cat / stack ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_cat_dtypes_dims(dtype, rng):
    a, ta = make((2, 3, 4), dtype, rng)
    b, tb = make((2, 5, 4), dtype, rng)
    check(ember.cat([ta, tb], 1), np.concatenate([a, b], 1), dtype)
    check(ember.cat((ta, ta, ta), -1), np.concatenate([a, a, a], -1), dtype)
    check(ember.cat([ta], 0), a, dtype)


def test_cat_promotes_and_skips_legacy_empty(rng):
    a, ta = make((2, 3), "int32", rng)
    b, tb = make((1, 3), "float32", rng)
    out = ember.cat([ta, tb, ember.zeros(0, dtype=ember.float64)])
    assert out.dtype == ember.float64
    check(out, np.concatenate([a, b]).astype(np.float64))
    check(ember.cat([E([True]), E([3])]), [1, 3], "int64")
    # only 1-d empty tensors: an empty result of the promoted type
    out = ember.cat([ember.zeros(0, dtype=ember.int8), ember.zeros(0)])
    assert out.shape == (0,) and out.dtype == ember.float32
    # a 2-d empty tensor is not skipped, it must match
    check(ember.cat([ember.zeros(0, 3), ta]), a.astype(np.float32))


def test_cat_noncontiguous_and_aliases(rng):
    a, ta = make((4, 3), "float32", rng)
    b, tb = make((3, 4), "float64", rng)
    out = ember.cat([strided(ta), tb.t()], dim=1)
    check(out, np.concatenate([a, b.T], 1), "float64")
    check(ember.concat([ta, ta]), np.concatenate([a, a]))
    check(ember.concatenate([ta, ta], axis=1), np.concatenate([a, a], 1))
    check(ember.cat([ta, ta], axis=-1), np.concatenate([a, a], -1))


def test_cat_errors():
    x, y = ember.zeros(2, 2), ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"ember.cat\(\): expected a non-empty list of Tensors"):
        ember.cat([])
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 1. "
                       r"Expected size 2 but got size 3 for tensor number 1 in the list."):
        ember.cat([ember.zeros(2, 4), ember.zeros(3, 4)], 1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        ember.cat([x, ember.zeros(2)])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\) cannot be "
                       "concatenated"):
        ember.cat([x, ember.tensor(1.0)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cat([x, y], 2)
    with pytest.raises(TypeError, match="must be tuple of Tensors, not .*Tensor"):
        ember.cat(x)
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        ember.cat([x, 1])
    with pytest.raises(TypeError, match="both 'dim' and its alias 'axis'"):
        ember.cat([x, x], 0, axis=0)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim, rng):
    a, ta = make((2, 3), "int64", rng)
    b, tb = make((2, 3), "int64", rng)
    check(ember.stack([ta, strided(tb)], dim), np.stack([a, b], dim))
    check(ember.stack([E(1.5), E(2.5)]), [1.5, 2.5])
    check(ember.stack([ember.zeros(0), ember.zeros(0)], 1), np.zeros((0, 2)))


def test_stack_errors():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                       r"\[2, 3\] at entry 0 and \[2, 4\] at entry 1"):
        ember.stack([ember.zeros(2, 3), ember.zeros(2, 4)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        ember.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.stack([ember.zeros(2)], 2)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 2)])
def test_hvd_column_stack(shape, rng):
    a, ta = make(shape, "float32", rng)
    b, tb = make(shape, "float32", rng)
    check(ember.hstack([ta, tb]), np.hstack([a, b]))
    check(ember.vstack([ta, tb]), np.vstack([a, b]))
    check(ember.row_stack((ta, tb)), np.vstack([a, b]))
    check(ember.dstack([ta, tb]), np.dstack([a, b]))
    if len(shape) <= 2:
        check(ember.column_stack([ta, tb]), np.column_stack([a, b]))
    with pytest.raises(RuntimeError, match="hstack expects a non-empty TensorList"):
        ember.hstack([])


# ---- flip / roll -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_flip_dtypes(dtype, rng):
    a, ta = make((3, 4, 5), dtype, rng)
    check(ember.flip(ta, (0, 2)), np.flip(a, (0, 2)), dtype)
    check(ta.flip(-1), np.flip(a, -1), dtype)


def test_flip_shapes_and_views(rng):
    a, ta = make((4, 1000), "float32", rng)  # long rows: the merged-table fast path
    check(ember.flip(ta, [0]), a[::-1])
    check(ember.flip(ta, [1]), a[:, ::-1])
    check(ta.flip(0, 1), a[::-1, ::-1])
    check(strided(ta).flip([1]), a[:, ::-1])
    check(ta.t().flip(0), a.T[::-1])
    check(ta.flip([]), a)
    check(E(3.0).flip(0), 3.0)
    check(ember.zeros(0, 3).flip(1), np.zeros((0, 3)))
    check(ember.fliplr(ta), np.fliplr(a))
    check(ta.flipud(), np.flipud(a))


def test_flip_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        x.flip(1, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        ember.fliplr(ember.zeros(3))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d"):
        ember.flipud(ember.tensor(1.0))


@pytest.mark.parametrize("shifts,dims", [(1, 0), (-2, 1), (7, -1), ((1, 2), (0, 1)),
                                         ((3, -1), (1, 1)), (2, None), ((5,), None),
                                         ((1, 1, 1), (0, 1, 2))])
def test_roll(shifts, dims, rng):
    a, ta = make((3, 4, 5), "int16", rng)
    expected = np.roll(a, shifts, dims)
    check(ember.roll(ta, shifts, dims), expected, "int16")
    check(strided(ta).roll(shifts, dims), expected)
    check(ta.transpose(0, 2).roll(shifts, dims), np.roll(a.transpose(2, 1, 0), shifts, dims))


def test_roll_edge_cases(rng):
    a, ta = make((2, 300), "bfloat16", rng)
    check(ta.roll(-301, 1), np.roll(a, -301, 1), "bfloat16")
    check(ember.zeros(0, 3).roll(1, 0), np.zeros((0, 3)))
    check(E(2.0).roll(1), 2.0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        ta.roll((1, 2), 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        ta.roll((1, 2))
    with pytest.raises(RuntimeError, match="`shifts` required"):
        ta.roll(())
    with pytest.raises(IndexError, match="Dimension out of range"):
        ta.roll(1, 2)


# ---- repeat / tile / repeat_interleave ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_repeat_dtypes(dtype, rng):
    a, ta = make((2, 3), dtype, rng)
    check(ta.repeat(2, 3), np.tile(a, (2, 3)), dtype)
    check(ta.repeat((3, 1, 2)), np.tile(a, (3, 1, 2)), dtype)


def test_repeat_tile_shapes(rng):
    a, ta = make((2, 3), "float32", rng)
    check(strided(ta).repeat([2, 2]), np.tile(a, (2, 2)))
    check(ta.t().repeat(1, 2), np.tile(a.T, (1, 2)))
    check(ta.repeat(0, 2), np.zeros((0, 6)))
    check(E(5).repeat(3), [5, 5, 5])
    check(E(5).repeat(()), 5)
    check(ember.tile(ta, (2,)), np.tile(a, 2))
    check(ta.tile(2, 1, 1), np.tile(a, (2, 1, 1)))
    check(ta.tile((3,)), np.tile(a, 3))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller "
                       "than number of dimensions of tensor"):
        ta.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ta.repeat(-1, 2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ta.tile(-2)


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "float64"])
def test_repeat_interleave(dtype, rng):
    a, ta = make((3, 4), dtype, rng)
    check(ember.repeat_interleave(ta, 2), np.repeat(a, 2), dtype)
    check(ta.repeat_interleave(3, dim=1), np.repeat(a, 3, 1), dtype)
    check(strided(ta).repeat_interleave(2, 0), np.repeat(a, 2, 0))
    reps = np.array([1, 0, 3])
    check(ta.repeat_interleave(E(reps), dim=0), np.repeat(a, reps, 0), dtype)
    check(ta.t().repeat_interleave(E(reps.astype(np.int32)), dim=-1), np.repeat(a.T, reps, -1))
    check(ta.repeat_interleave(E([2]), dim=1), np.repeat(a, 2, 1))
    check(ta.repeat_interleave(E(2)), np.repeat(a, 2))
    check(ta.repeat_interleave(E(np.arange(12) % 3)), np.repeat(a.ravel(), np.arange(12) % 3))
    check(ta.repeat_interleave(0, dim=0), np.zeros((0, 4)))
    check(E(7).repeat_interleave(2), [7, 7])


def test_repeat_interleave_index_form_and_errors():
    check(ember.repeat_interleave(E([1, 0, 2])), [0, 2, 2], "int64")
    check(ember.repeat_interleave(E(np.array([2, 1], np.int32))), [0, 0, 1], "int32")
    x = ember.zeros(3, 2)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(E([1, -1, 0]), dim=0)
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, "
                       r"but got repeats.size\(0\) = 2 and input.size\(0\) = 3"):
        x.repeat_interleave(E([1, 2]), dim=0)
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
        x.repeat_interleave(E([[1]]), dim=0)
    with pytest.raises(RuntimeError, match="repeats has to be Long or Int tensor"):
        x.repeat_interleave(E([1.0, 2.0, 3.0]), dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.repeat_interleave(2, dim=2)


# ---- sort / argsort / msort -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_dtypes(dtype, descending, rng):
    a, ta = make((5, 37), dtype, rng)
    for dim in (0, 1, -1):
        values, indices = ember.sort(ta, dim, descending)
        expected = np.sort(a, axis=dim)
        if descending:
            expected = np.flip(expected, dim)
        check(values, expected, dtype)
        assert indices.dtype == ember.int64
        np.testing.assert_array_equal(np.take_along_axis(a, N(indices), dim), expected)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable(descending, rng):
    a = rng.integers(0, 4, size=(6, 200)).astype(np.int32)
    values, indices = E(a).sort(dim=1, descending=descending, stable=True)
    key = -a.astype(np.int64) if descending else a
    check(indices, np.argsort(key, axis=1, kind="stable"))
    check(E(a).argsort(1, descending, stable=True), np.argsort(key, axis=1, kind="stable"))
    check(values, np.take_along_axis(a, np.argsort(key, axis=1, kind="stable"), 1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_sort_nan_order(dtype):
    a = np.array([3.0, np.nan, -np.inf, 1.0, np.nan, np.inf, -0.5], np.float32)
    values, indices = E(a, dtype).sort(stable=True)
    check(values, [-np.inf, -0.5, 1.0, 3.0, np.inf, np.nan, np.nan])
    check(indices, [2, 6, 3, 0, 5, 1, 4])
    values, indices = E(a, dtype).sort(descending=True, stable=True)
    check(values, [np.nan, np.nan, np.inf, 3.0, 1.0, -0.5, -np.inf])
    check(indices, [1, 4, 5, 0, 3, 6, 2])


def test_sort_shapes_and_views(rng):
    a, ta = make((40, 600), "float32", rng)  # several rows in parallel
    r = ember.sort(ta)
    assert isinstance(r, tuple) and r._fields == ("values", "indices")
    check(r.values, np.sort(a, 1))
    check(strided(ta).sort(0).values, np.sort(a, 0))
    check(ta.t().sort(1, True)[0], -np.sort(-a.T, 1))
    v, i = E(2.5).sort()
    check(v, 2.5)
    check(i, 0)
    v, i = ember.zeros(0, 3).sort(0)
    assert v.shape == (0, 3) and i.shape == (0, 3) and i.dtype == ember.int64
    check(ember.msort(ta.t()), np.sort(a.T, 0))
    np.testing.assert_array_equal(np.take_along_axis(a, N(ember.argsort(ta, 0)), 0), np.sort(a, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ta.sort(2)


# ---- topk / kthvalue -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest, rng):
    a, ta = make((6, 50), dtype, rng)
    for dim, k in ((1, 5), (0, 6), (-1, 50), (1, 0)):
        values, indices = ember.topk(ta, k, dim, largest)
        s = np.sort(a, axis=dim)
        expected = np.flip(s, dim) if largest else s
        expected = np.take(expected, np.arange(k), axis=dim)
        check(values, expected, dtype)
        np.testing.assert_array_equal(np.take_along_axis(a, N(indices), dim), expected)


def test_topk_nan_views_and_errors(rng):
    a = np.array([1.0, np.nan, 5.0, -1.0], np.float32)
    r = E(a).topk(2)
    assert r._fields == ("values", "indices")
    check(r.values, [np.nan, 5.0])
    check(r.indices, [1, 2])
    check(E(a).topk(2, largest=False).values, [-1.0, 1.0])
    b, tb = make((30, 40), "float64", rng)
    check(strided(tb).t().topk(3, sorted=False).values, -np.sort(-b.T, 1)[:, :3])
    check(E(4.0).topk(1).values, 4.0)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        E(a).topk(5)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        E(a).topk(-1)
    with pytest.raises(RuntimeError, match="\"topk\" not implemented for 'bool'"):
        E([True, False]).topk(1)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32"])
def test_kthvalue(dtype, rng):
    a, ta = make((7, 9), dtype, rng)
    for dim in (0, 1):
        for k in (1, 4, a.shape[dim]):
            r = ember.kthvalue(ta, k, dim)
            assert r._fields == ("values", "indices")
            expected = np.take(np.sort(a, dim), k - 1, axis=dim)
            check(r.values, expected, dtype)
            got_idx = np.expand_dims(N(r.indices), dim)
            np.testing.assert_array_equal(np.take_along_axis(a, got_idx, dim)[..., :].squeeze(dim),
                                          expected)
    v, i = ta.kthvalue(2, 0, keepdim=True)
    assert v.shape == (1, 9) and i.shape == (1, 9)
    check(E([1.0, np.nan, 0.0]).kthvalue(3).values, np.nan)


def test_kthvalue_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range for "
                       "dimension 1"):
        x.kthvalue(4)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        ember.zeros(2, 0).kthvalue(1)


# ---- unique / unique_consecutive ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_unique(dtype, rng):
    a, ta = make((4, 25), dtype, rng, -5, 5)
    out, inv, cnt = ember.unique(ta, return_inverse=True, return_counts=True)
    u, ui, uc = np.unique(a, return_inverse=True, return_counts=True)
    check(out, u, dtype)
    check(inv, ui.reshape(a.shape), "int64")
    check(cnt, uc, "int64")
    check(strided(ta).unique(), u)
    out, cnt = ta.t().unique(sorted=False, return_counts=True)
    check(out, u)
    check(cnt, uc)


def test_unique_nan_and_edge_cases():
    a = np.array([2.0, np.nan, 1.0, np.nan, 2.0], np.float32)
    out, cnt = ember.unique(E(a), return_counts=True)
    check(out, [1.0, 2.0, np.nan, np.nan])  # NaNs are never merged
    check(cnt, [1, 2, 1, 1])
    out, inv = ember.unique(E(3), return_inverse=True)
    check(out, [3])
    check(inv, 0)
    check(ember.unique(ember.zeros(0, 2)), np.zeros(0))


def test_unique_dim(rng):
    a = rng.integers(0, 2, size=(6, 3, 2)).astype(np.int64)
    a[3] = a[0]
    for dim in (0, 1, -1):
        out, inv, cnt = ember.unique(E(a), dim=dim, return_inverse=True, return_counts=True)
        u, ui, uc = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
        check(out, u)
        check(inv, ui.ravel())
        check(cnt, uc)
    out = ember.unique(ember.zeros(0, 3), dim=0)
    assert out.shape == (0, 3)
    with pytest.raises(RuntimeError, match="There are 0 sized dimensions, and they aren't selected"):
        ember.unique(ember.zeros(2, 0), dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.unique(ember.zeros(2, 2), dim=2)


def consecutive_reference(seq):
    vals, inv, cnt = [], [], []
    for x in seq:
        if not vals or not (vals[-1] == x):
            vals.append(x)
            cnt.append(0)
        cnt[-1] += 1
        inv.append(len(vals) - 1)
    return vals, inv, cnt


@pytest.mark.parametrize("dtype", ["bool", "int64", "bfloat16", "float32"])
def test_unique_consecutive(dtype, rng):
    a, ta = make((3, 20), dtype, rng, -2, 2)
    out, inv, cnt = ember.unique_consecutive(ta, return_inverse=True, return_counts=True)
    v, i, c = consecutive_reference(list(a.ravel()))
    check(out, v, dtype)
    check(inv, np.array(i).reshape(a.shape))
    check(cnt, c)
    rows = E(np.array([[1, 2], [1, 2], [3, 4], [1, 2]]))
    out, inv, cnt = rows.unique_consecutive(return_inverse=True, return_counts=True, dim=0)
    check(out, [[1, 2], [3, 4], [1, 2]])
    check(inv, [0, 0, 1, 2])
    check(cnt, [2, 1, 1])


# ---- searchsorted / bucketize ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_1d(dtype, side, rng):
    seq, _ = make((30,), dtype, rng)
    seq = np.sort(seq)
    vals, tv = make((4, 7), dtype, rng)
    out = ember.searchsorted(E(seq, dtype), tv, side=side)
    check(out, np.searchsorted(seq, vals, side=side), "int64")
    out = ember.searchsorted(E(seq, dtype), strided(tv), right=side == "right", out_int32=True)
    check(out, np.searchsorted(seq, vals, side=side), "int32")


def test_searchsorted_batched_scalar_sorter_nan(rng):
    seq = np.sort(rng.normal(size=(2, 3, 10)), -1)
    vals = rng.normal(size=(2, 3, 4))
    out = ember.searchsorted(E(seq), E(vals))
    expected = np.stack([[np.searchsorted(seq[i, j], vals[i, j]) for j in range(3)]
                         for i in range(2)])
    check(out, expected)
    s = E([1.0, 2.0, 2.0, 3.0])
    check(ember.searchsorted(s, 2), 1)
    check(ember.searchsorted(s, 2.0, right=True), 3)
    assert ember.searchsorted(s, 2).shape == ()
    # mixed dtypes compare in the promoted dtype
    check(ember.searchsorted(E([1, 2, 3]), E([1.5, 2.5])), [1, 2])
    unsorted = np.array([3.0, 1.0, 2.0])
    sorter = np.argsort(unsorted)
    check(ember.searchsorted(E(unsorted), E([0.5, 2.5]), sorter=E(sorter)),
          np.searchsorted(unsorted, [0.5, 2.5], sorter=sorter))
    # PyTorch's `!(x >= v)` test steps past a NaN in the sequence, even for v = inf
    check(ember.searchsorted(E([1.0, 2.0, np.nan]), E([np.nan, 1.5, np.inf])), [3, 1, 3])
    check(ember.searchsorted(ember.zeros(0), E([1.0])), [0])


def test_searchsorted_errors():
    s = E([1.0, 2.0])
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got middle"):
        ember.searchsorted(s, E([1.0]), side="middle")
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(s, E([1.0]), side="left", right=True)
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension or the first "
                       "N-1 dimensions"):
        ember.searchsorted(ember.zeros(2, 3), ember.zeros(3, 1))
    with pytest.raises(RuntimeError, match="input value can be a scalar only when boundaries tensor "
                       "dimension is 1"):
        ember.searchsorted(ember.zeros(2, 3), E(1.0))
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension"):
        ember.searchsorted(E(1.0), E([1.0]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ember.searchsorted(s, E([1.0]), sorter=E([0, 2]))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        ember.searchsorted(s, E([1.0]), sorter=E(np.array([0, 1], np.int32)))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        ember.searchsorted(s, E([1.0]), sorter=E([0]))
    with pytest.raises(RuntimeError, match="not implemented for 'bool'"):
        ember.searchsorted(E([False, True]), E([True]))


def test_bucketize(rng):
    bounds = np.array([-1.0, 0.0, 0.5, 2.0])
    x = rng.normal(size=(3, 5))
    check(ember.bucketize(E(x), E(bounds)), np.searchsorted(bounds, x, side="left"))
    check(ember.bucketize(E(x), E(bounds), right=True, out_int32=True),
          np.searchsorted(bounds, x, side="right"), "int32")
    check(ember.bucketize(0.5, E(bounds)), 2)
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        ember.bucketize(E(x), ember.zeros(2, 2))



def test_large_inputs_take_the_parallel_paths(rng):
    # rows longer than the merged-table limit: several outer dims split across threads
    a, ta = make((5, 6, 70000), "int8", rng)
    check(ta.flip(0, 2), a[::-1, :, ::-1])
    check(ta.roll((2, -3, 1000), (0, 1, 2)), np.roll(a, (2, -3, 1000), (0, 1, 2)))
    check(ta.transpose(0, 1).repeat_interleave(E(np.arange(5)), dim=1),
          np.repeat(a.transpose(1, 0, 2), np.arange(5), 1))
    b, tb = make((300, 500), "float32", rng)
    check(tb.t().sort(1, descending=True).values, -np.sort(-b.T, 1))
    check(tb.topk(7, dim=0).values, -np.sort(-b, 0)[:7])
