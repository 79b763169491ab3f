"""The CUDA sorting and selection kernels (backends/cuda/sort.cu) against the CPU kernels:
sort / argsort / msort, topk, kthvalue, median / nanmedian, mode, searchsorted / bucketize and
unique / unique_consecutive, in every dtype the CPU kernel takes, on empty, 0-d, size-1,
non-contiguous and transposed inputs, rows short enough for the block-per-row sort and long
enough for the device-wide radix sort, with NaN / inf / -0.0 and many ties; gradients of the
value-selecting ops; the error paths raise the CPU's exception type.

Where the CPU's index choice among equal values is unspecified (sort with stable=False uses
std::sort, median std::nth_element), the indices are checked by gathering the input with
them; everywhere else they are compared exactly.

How these tests run on each device: device_compare.py.
"""
import numpy as np
import pytest
from device_compare import (
    ALL,
    FLOATS,
    INTS,
    as_numpy,
    assert_same,
    check,
    cmp_dev,
    make,
    noncontig,
    seeded,
    to_dev,
)

import ember

pytestmark = pytest.mark.usefixtures("compare_device")

NUMERIC = INTS + FLOATS

# rows of the block-per-row sort (up to 4096 elements, four block shapes) and of the
# device-wide radix sort
ROW_LENGTHS = [1, 31, 64, 65, 256, 1024, 4096, 5000, 70000]


def check_pair(fn, x, dim, exact_indices, what, gather=True):
    """fn(x) -> (values, indices) on the CPU and on the device: values equal; indices equal, or
    (not exact_indices) pointing at equal values of x along dim."""
    ev, ei = fn(x)
    av, ai = fn(to_dev(x))
    assert_same(ev, av, what=what + " values")
    if exact_indices:
        assert_same(ei, ai, what=what + " indices")
        return
    assert ai.dtype == ei.dtype and tuple(ai.shape) == tuple(ei.shape), what
    assert ai.device.type == ember.device(cmp_dev()).type, what
    if gather and x.dim() > 0:
        idx = ai.cpu()
        if idx.dim() < x.dim():
            idx = idx.unsqueeze(dim)
        got = ember.gather(x, dim, idx)
        np.testing.assert_array_equal(as_numpy(got).reshape(-1), as_numpy(ev).reshape(-1),
                                      err_msg=what + " indices")


def tied(dtype_name):
    """Whether random inputs of the dtype have repeated values."""
    return dtype_name not in ("float32", "float64")


# ---- sort / argsort / msort ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ALL)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_row_lengths(dtype_name, descending):
    rng = seeded("sort", dtype_name, descending)
    for n in ROW_LENGTHS:
        rows = 3 if n <= 5000 else 1
        x = make((rows, n), dtype_name, rng, special=True)
        for stable in (True, False):
            # unstable: the indices of tied values (0.0 and -0.0 among the special values
            # of every float dtype) may come in any order
            check_pair(lambda t: ember.sort(t, -1, descending, stable=stable), x, 1, stable,
                       what=f"sort {dtype_name} n={n} desc={descending} stable={stable}")
    # several long rows: the radix sort by key, then by row
    x = make((3, 6000), dtype_name, rng, special=True)
    check_pair(lambda t: ember.sort(t, 1, descending, stable=True), x, 1, True,
               what=f"sort {dtype_name} 3x6000")


@pytest.mark.parametrize("dtype_name", ALL)
def test_sort_dims_and_layouts(dtype_name):
    rng = seeded("sort layouts", dtype_name)
    x = make((4, 5, 6), dtype_name, rng, special=True)
    for dim in (0, 1, 2, -1):
        for descending in (False, True):
            check_pair(lambda t: ember.sort(t, dim, descending, stable=True), x, dim, True,
                       what=f"sort {dtype_name} dim={dim} desc={descending}")
    check_pair(lambda t: ember.sort(t, 0, stable=True), noncontig((7, 9), dtype_name, rng), 0,
               True, what=f"sort {dtype_name} strided dim 0")
    check_pair(lambda t: ember.sort(t, 1, True, stable=True), noncontig((7, 9), dtype_name, rng),
               1, True, what=f"sort {dtype_name} strided dim 1")
    xt = make((2000, 3), dtype_name, rng).t()  # long strided rows
    check_pair(lambda t: ember.sort(t, 1, stable=True), xt, 1, True,
               what=f"sort {dtype_name} transposed")
    check_pair(lambda t: ember.sort(t, 0, stable=True), make((5000, 2), dtype_name, rng), 0, True,
               what=f"sort {dtype_name} 5000x2 dim 0")
    # 0-d, empty, size-1 dims, many rows of one element
    for shape, dim in (((), 0), ((0,), 0), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1), ((1,), 0),
                       ((5, 1), 1), ((5, 1), 0), ((1, 5), 0), ((300, 1, 2), 1)):
        check_pair(lambda t: ember.sort(t, dim, stable=True), make(shape, dtype_name, rng), dim,
                   True, what=f"sort {dtype_name} {shape} dim={dim}")
    # many rows (grid-stride over the rows)
    check_pair(lambda t: ember.sort(t, 1, stable=True), make((3000, 7), dtype_name, rng), 1, True,
               what=f"sort {dtype_name} 3000 rows")


@pytest.mark.parametrize("dtype_name", ["int32", "float16", "float32"])
def test_argsort_msort_stable_ties(dtype_name):
    rng = seeded("argsort", dtype_name)
    x = ember.from_numpy(rng.integers(0, 4, size=(6, 2000))).to(getattr(ember, dtype_name))
    for descending in (False, True):
        check(lambda t: ember.argsort(t, 1, descending, stable=True), x,
              what=f"argsort {dtype_name} desc={descending}")
        check(lambda t: ember.argsort(t, 0, descending, stable=True), x,
              what=f"argsort {dtype_name} dim 0 desc={descending}")
    y = ember.from_numpy(rng.integers(0, 3, size=70000)).to(getattr(ember, dtype_name))
    check(lambda t: ember.argsort(t, 0, True, stable=True), y, what=f"argsort {dtype_name} long")
    check(ember.msort, make((9, 4), dtype_name, rng), what=f"msort {dtype_name}")


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_sort_nan_inf_signed_zero(dtype_name):
    a = np.array([3.0, np.nan, -np.inf, 0.0, 1.0, -0.0, np.nan, np.inf, -0.5, 0.0, -0.0])
    x = ember.from_numpy(a).to(getattr(ember, dtype_name))
    for descending in (False, True):
        check_pair(lambda t: ember.sort(t, 0, descending, stable=True), x, 0, True,
                   what=f"sort nan {dtype_name} desc={descending}")
        # -0.0 keeps its sign in the values
        got = ember.sort(to_dev(x), 0, descending, stable=True)[0].cpu().to(ember.float64)
        exp = ember.sort(x, 0, descending, stable=True)[0].to(ember.float64)
        assert list(np.signbit(got.numpy())) == list(np.signbit(exp.numpy()))
    rng = seeded("nan long", dtype_name)
    big = rng.uniform(-2, 2, size=70000)
    big[rng.integers(0, 70000, size=300)] = np.nan
    big[:4] = [np.inf, -np.inf, 0.0, -0.0]
    xb = ember.from_numpy(big).to(getattr(ember, dtype_name))
    for descending in (False, True):
        check_pair(lambda t: ember.sort(t, 0, descending, stable=True), xb, 0, True,
                   what=f"sort nan long {dtype_name} desc={descending}")


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_sort_grad(dtype_name):
    rng = seeded("sort grad", dtype_name)

    def grad(x0, w, dim, descending):
        x = x0.detach().clone().requires_grad_(True)
        values, _ = ember.sort(x, dim, descending, stable=True)
        (values * w).sum().backward()
        return x.grad

    for shape, dim in (((5, 40), 1), ((5, 40), 0), ((2, 5000), 1)):
        w = make(shape, dtype_name, rng)
        for descending in (False, True):
            check(grad, make(shape, dtype_name, rng), w, dim, descending,
                  what=f"sort grad {dtype_name} {shape} dim={dim}")


# ---- topk -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", NUMERIC)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype_name, largest):
    rng = seeded("topk", dtype_name, largest)
    x = make((6, 50), dtype_name, rng, special=True)
    for dim, k in ((1, 5), (0, 6), (-1, 50), (1, 0), (0, 1), (1, 1)):
        for sorted_ in (True, False):
            check(lambda t: ember.topk(t, k, dim, largest, sorted_), x,
                  what=f"topk {dtype_name} dim={dim} k={k} sorted={sorted_}")
    for n, k in ((31, 31), (1024, 10), (5000, 100), (70000, 7)):
        x = make((2, n) if n <= 5000 else (n,), dtype_name, rng, special=True)
        check(lambda t: ember.topk(t, k, -1, largest), x, what=f"topk {dtype_name} n={n} k={k}")
    check(lambda t: ember.topk(t, 3, 0, largest), noncontig((9, 4), dtype_name, rng),
          what=f"topk {dtype_name} strided dim 0")
    check(lambda t: ember.topk(t, 2, 1, largest), make((7, 5), dtype_name, rng).t(),
          what=f"topk {dtype_name} transposed")
    check(lambda t: ember.topk(t, 1, 0, largest), make((), dtype_name, rng),
          what=f"topk {dtype_name} 0-d")
    check(lambda t: ember.topk(t, 0, 0, largest), make((0,), dtype_name, rng),
          what=f"topk {dtype_name} empty")
    check(lambda t: ember.topk(t, 2, 1, largest), make((0, 4), dtype_name, rng),
          what=f"topk {dtype_name} no rows")


def test_topk_errors_and_grad():
    rng = seeded("topk errors")
    x = make((4, 5), "float32", rng)
    check(lambda t: ember.topk(t, 6), x, what="topk k > n")
    check(lambda t: ember.topk(t, -1), x, what="topk k < 0")
    check(lambda t: ember.topk(t, 1), make((4,), "bool", rng), what="topk bool")

    def grad(x0, w, k, largest):
        t = x0.detach().clone().requires_grad_(True)
        (ember.topk(t, k, 1, largest)[0] * w).sum().backward()
        return t.grad

    for dtype_name in FLOATS:
        x = make((3, 60), dtype_name, rng)
        for largest in (True, False):
            check(grad, x, make((3, 7), dtype_name, rng), 7, largest,
                  what=f"topk grad {dtype_name}")


# ---- kthvalue ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", NUMERIC)
def test_kthvalue(dtype_name):
    rng = seeded("kthvalue", dtype_name)
    x = make((7, 9), dtype_name, rng, special=True)
    for dim in (0, 1):
        for k in (1, 4, x.shape[dim]):
            for keepdim in (False, True):
                check(lambda t: ember.kthvalue(t, k, dim, keepdim), x,
                      what=f"kthvalue {dtype_name} dim={dim} k={k} keepdim={keepdim}")
    for n in (1, 31, 1024, 5000, 70000):
        x = make((2, n) if n <= 5000 else (n,), dtype_name, rng, special=True)
        for k in sorted({1, (n + 1) // 2, n}):
            check(lambda t: ember.kthvalue(t, k, -1), x, what=f"kthvalue {dtype_name} n={n} k={k}")
    check(lambda t: ember.kthvalue(t, 2, 0), noncontig((5, 3), dtype_name, rng),
          what=f"kthvalue {dtype_name} strided")
    check(lambda t: ember.kthvalue(t, 1), make((), dtype_name, rng), what=f"kthvalue {dtype_name} 0-d")
    check(lambda t: ember.kthvalue(t, 2, 1), make((0, 3), dtype_name, rng),
          what=f"kthvalue {dtype_name} no rows")


def test_kthvalue_errors_and_grad():
    rng = seeded("kthvalue errors")
    x = make((2, 3), "float32", rng)
    check(lambda t: ember.kthvalue(t, 4), x, what="kthvalue k > n")
    check(lambda t: ember.kthvalue(t, 0), x, what="kthvalue k = 0")
    check(lambda t: ember.kthvalue(t, 1), make((2, 0), "float32", rng), what="kthvalue empty dim")
    check(lambda t: ember.kthvalue(t, 1), make((3,), "bool", rng), what="kthvalue bool")

    def grad(x0, k):
        t = x0.detach().clone().requires_grad_(True)
        ember.kthvalue(t, k, 1)[0].sum().backward()
        return t.grad

    for dtype_name in FLOATS:
        check(grad, make((4, 11), dtype_name, rng), 3, what=f"kthvalue grad {dtype_name}")


# ---- median / nanmedian --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", NUMERIC)
def test_median(dtype_name):
    rng = seeded("median", dtype_name)
    exact = not tied(dtype_name)
    for shape in ((1,), (2,), (7,), (8,), (1000,), (5000,), (70000,), (3, 4)):
        x = make(shape, dtype_name, rng)
        check(ember.median, x, what=f"median {dtype_name} {shape}")
    x = make((64,), dtype_name, rng, special=True)  # a NaN: the first NaN
    check(ember.median, x, what=f"median {dtype_name} special")
    for shape, dim in (((5, 8), 1), ((5, 8), 0), ((3, 4, 5), 1), ((2, 5000), 1), ((70000,), 0),
                       ((6, 1), 1), ((4, 7), -1)):
        for keepdim in (False, True):
            check_pair(lambda t: ember.median(t, dim, keepdim), make(shape, dtype_name, rng),
                       dim, exact, what=f"median {dtype_name} {shape} dim={dim}")
    # rows with and without NaN: a NaN row gives its first NaN and that index
    x = make((6, 33), dtype_name, rng)
    if dtype_name in FLOATS:
        a = x.to(ember.float64).numpy()
        a[1, [5, 20]] = np.nan
        a[4, 32] = np.nan
        x = ember.from_numpy(a).to(x.dtype)
    check_pair(lambda t: ember.median(t, 1), x, 1, exact, what=f"median {dtype_name} nan rows")
    check_pair(lambda t: ember.median(t, 0), noncontig((9, 4), dtype_name, rng), 0, exact,
               what=f"median {dtype_name} strided")
    check_pair(lambda t: ember.median(t, 0), make((), dtype_name, rng), 0, True,
               what=f"median {dtype_name} 0-d")
    check_pair(lambda t: ember.median(t, 1), make((0, 4), dtype_name, rng), 1, True,
               what=f"median {dtype_name} no rows")
    # ties: the index points at an element equal to the median
    ties = ember.from_numpy(rng.integers(0, 3, size=(4, 101))).to(x.dtype)
    check_pair(lambda t: ember.median(t, 1), ties, 1, False, what=f"median {dtype_name} ties")


def test_median_errors_and_grad():
    rng = seeded("median errors")
    check(ember.median, make((0,), "float32", rng), what="median empty float")
    check(ember.median, make((0,), "int32", rng), what="median empty int")
    check(ember.median, make((3,), "bool", rng), what="median bool")
    check(lambda t: ember.median(t, 1), make((3, 0), "float32", rng), what="median empty dim")

    def grad(x0):
        t = x0.detach().clone().requires_grad_(True)
        ember.median(t, 1)[0].sum().backward()
        return t.grad

    def grad_full(x0):
        t = x0.detach().clone().requires_grad_(True)
        ember.median(t).backward()
        return t.grad

    for dtype_name in ("float32", "float64"):
        check(grad, make((4, 9), dtype_name, rng), what=f"median grad {dtype_name}")
        check(grad_full, make((4, 9), dtype_name, rng), what=f"median full grad {dtype_name}")


@pytest.mark.parametrize("dtype_name", ["int64", "float16", "float32", "float64"])
def test_nanmedian(dtype_name):
    rng = seeded("nanmedian", dtype_name)
    x = make((6, 40), dtype_name, rng, special=True)
    check(ember.nanmedian, x, what=f"nanmedian {dtype_name}")
    check_pair(lambda t: ember.nanmedian(t, 1), x, 1, not tied(dtype_name),
               what=f"nanmedian {dtype_name} dim 1")
    check_pair(lambda t: ember.nanmedian(t, 0), make((5000, 2), dtype_name, rng, special=True), 0,
               not tied(dtype_name), what=f"nanmedian {dtype_name} long")


# ---- mode ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ALL)
def test_mode(dtype_name):
    rng = seeded("mode", dtype_name)
    for shape, dim in (((5, 30), 1), ((5, 30), 0), ((3, 4, 6), 1), ((2, 1024), 1),
                       ((2, 5000), 1), ((70000,), 0), ((7, 1), 1), ((1, 7), 1)):
        for keepdim in (False, True):
            check(lambda t: ember.mode(t, dim, keepdim), make(shape, dtype_name, rng),
                  what=f"mode {dtype_name} {shape} dim={dim}")
    # few distinct values: long runs, ties between runs pick the smallest value
    few = ember.from_numpy(rng.integers(0, 3, size=(40, 12))).to(getattr(ember, dtype_name))
    check(lambda t: ember.mode(t, 1), few, what=f"mode {dtype_name} ties")
    if dtype_name in FLOATS:
        a = np.array([[np.nan, 1.0, np.nan, 2.0, 2.0, np.nan], [0.0, -0.0, 1.0, 1.0, -0.0, 3.0],
                      [np.inf, -np.inf, np.inf, -np.inf, 5.0, 5.0]])
        check(lambda t: ember.mode(t, 1), ember.from_numpy(a).to(getattr(ember, dtype_name)),
              what=f"mode {dtype_name} nan / -0.0")
    check(lambda t: ember.mode(t, 0), noncontig((9, 5), dtype_name, rng),
          what=f"mode {dtype_name} strided")
    check(lambda t: ember.mode(t), make((), dtype_name, rng), what=f"mode {dtype_name} 0-d")
    check(lambda t: ember.mode(t, 1), make((0, 3), dtype_name, rng),
          what=f"mode {dtype_name} no rows")
    check(lambda t: ember.mode(t, 1), make((3, 0), dtype_name, rng),
          what=f"mode {dtype_name} empty dim")


def test_mode_grad():
    rng = seeded("mode grad")

    def grad(x0, w):
        t = x0.detach().clone().requires_grad_(True)
        (ember.mode(t, 1)[0] * w).sum().backward()
        return t.grad

    for dtype_name in FLOATS:
        x = ember.from_numpy(rng.integers(0, 4, size=(5, 13)).astype(np.float64)).to(
            getattr(ember, dtype_name))
        check(grad, x, make((5,), dtype_name, rng), what=f"mode grad {dtype_name}")


# ---- searchsorted / bucketize ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", NUMERIC)
def test_searchsorted(dtype_name):
    rng = seeded("searchsorted", dtype_name)
    seq = ember.sort(make((300,), dtype_name, rng))[0]
    vals = make((4, 70), dtype_name, rng, special=True)
    for right in (False, True):
        for out_int32 in (False, True):
            check(lambda s, v: ember.searchsorted(s, v, out_int32=out_int32, right=right), seq,
                  vals, what=f"searchsorted {dtype_name} right={right} int32={out_int32}")
        check(lambda s, v: ember.searchsorted(s, v, side="right" if right else "left"), seq,
              noncontig((3, 11), dtype_name, rng), what=f"searchsorted {dtype_name} strided")
        check(lambda s, v: ember.bucketize(v, s, right=right), seq, vals,
              what=f"bucketize {dtype_name}")
    # batched boundaries, a sorter, a scalar value, an empty sequence, many values
    bseq = ember.sort(make((2, 3, 10), dtype_name, rng), -1)[0]
    check(lambda s, v: ember.searchsorted(s, v), bseq, make((2, 3, 4), dtype_name, rng),
          what=f"searchsorted {dtype_name} batched")
    check(lambda s, v: ember.searchsorted(s, v, right=True), bseq, make((2, 3, 0), dtype_name, rng),
          what=f"searchsorted {dtype_name} batched empty")
    unsorted = make((2, 25), dtype_name, rng)
    sorter = ember.argsort(unsorted, -1, stable=True)
    for right in (False, True):
        check(lambda s, v, o: ember.searchsorted(s, v, right=right, sorter=o), unsorted,
              make((2, 9), dtype_name, rng), sorter, what=f"searchsorted {dtype_name} sorter")
    check(lambda s: ember.searchsorted(s, 1), seq, what=f"searchsorted {dtype_name} scalar")
    check(lambda s, v: ember.searchsorted(s, v), make((0,), dtype_name, rng),
          make((5,), dtype_name, rng), what=f"searchsorted {dtype_name} empty sequence")
    check(lambda s, v: ember.searchsorted(s, v), seq, make((300000,), dtype_name, rng),
          what=f"searchsorted {dtype_name} many values")


def test_searchsorted_nan_and_errors():
    s = ember.tensor([1.0, 2.0, float("nan")])
    check(lambda a, b: ember.searchsorted(a, b), s, ember.tensor([float("nan"), 1.5, float("inf")]),
          what="searchsorted nan")
    check(lambda a, b: ember.searchsorted(a, b, right=True), s,
          ember.tensor([float("nan"), 2.0, float("-inf")]), what="searchsorted nan right")
    b = ember.tensor([1.0, 2.0])
    check(lambda a, v, o: ember.searchsorted(a, v, sorter=o), b, ember.tensor([1.0]),
          ember.tensor([0, 2]), what="sorter out of range")
    check(lambda a, v: ember.searchsorted(a, v), ember.zeros(2, 3), ember.zeros(3, 1),
          what="batch mismatch")
    check(lambda a, v: ember.searchsorted(a, v, side="middle"), b, ember.tensor([1.0]),
          what="bad side")
    check(lambda a, v: ember.searchsorted(a, v), ember.tensor([True, False]),
          ember.tensor([True]), what="bool")


# ---- unique / unique_consecutive --------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ALL)
def test_unique(dtype_name):
    rng = seeded("unique", dtype_name)
    for shape in ((4, 25), (1,), (), (0,), (0, 2), (100000,)):
        x = make(shape, dtype_name, rng, -5, 5)
        check(lambda t: ember.unique(t, return_inverse=True, return_counts=True), x,
              what=f"unique {dtype_name} {shape}")
        check(lambda t: ember.unique(t), x, what=f"unique {dtype_name} {shape} values")
    x = make((64,), dtype_name, rng, special=True)  # NaNs never merge
    check(lambda t: ember.unique(t, sorted=False, return_inverse=True, return_counts=True), x,
          what=f"unique {dtype_name} special")
    check(lambda t: ember.unique(t, return_counts=True), noncontig((6, 9), dtype_name, rng),
          what=f"unique {dtype_name} strided")
    check(lambda t: ember.unique(t, return_inverse=True), make((5, 7), dtype_name, rng).t(),
          what=f"unique {dtype_name} transposed")


@pytest.mark.parametrize("dtype_name", ["bool", "uint8", "int64", "float16", "float32"])
def test_unique_dim(dtype_name):
    rng = seeded("unique dim", dtype_name)
    a = ember.from_numpy(rng.integers(0, 2, size=(30, 3, 2))).to(getattr(ember, dtype_name))
    for dim in (0, 1, -1):
        check(lambda t: ember.unique(t, dim=dim, return_inverse=True, return_counts=True), a,
              what=f"unique {dtype_name} dim={dim}")
        check(lambda t: ember.unique_consecutive(t, dim=dim, return_inverse=True,
                                                 return_counts=True), a,
              what=f"unique_consecutive {dtype_name} dim={dim}")
    big = ember.from_numpy(rng.integers(0, 3, size=(20000, 4))).to(getattr(ember, dtype_name))
    check(lambda t: ember.unique(t, dim=0, return_inverse=True, return_counts=True), big,
          what=f"unique {dtype_name} many rows")
    if dtype_name in FLOATS:
        r = ember.from_numpy(np.array([[np.nan, 1.0], [0.0, 2.0], [np.nan, 1.0], [-0.0, 2.0],
                                       [np.inf, 0.0], [np.nan, 0.0]])).to(getattr(ember, dtype_name))
        check(lambda t: ember.unique(t, dim=0, return_inverse=True, return_counts=True), r,
              what=f"unique {dtype_name} dim nan rows")
    check(lambda t: ember.unique(t, dim=0), make((0, 3), dtype_name, rng),
          what=f"unique {dtype_name} dim empty")
    check(lambda t: ember.unique(t, dim=0), make((2, 0), dtype_name, rng),
          what=f"unique {dtype_name} dim error")
    check(lambda t: ember.unique(t, dim=2), make((2, 2), dtype_name, rng),
          what=f"unique {dtype_name} bad dim")
    check(lambda t: ember.unique(t, dim=0), make((), dtype_name, rng),
          what=f"unique {dtype_name} 0-d dim")


@pytest.mark.parametrize("dtype_name", ALL)
def test_unique_consecutive(dtype_name):
    rng = seeded("unique_consecutive", dtype_name)
    for shape in ((3, 20), (1,), (), (0,), (50000,)):
        x = make(shape, dtype_name, rng, -2, 2)
        check(lambda t: ember.unique_consecutive(t, return_inverse=True, return_counts=True), x,
              what=f"unique_consecutive {dtype_name} {shape}")
    x = make((64,), dtype_name, rng, special=True)
    check(lambda t: ember.unique_consecutive(t, return_counts=True), x,
          what=f"unique_consecutive {dtype_name} special")
    runs = ember.from_numpy(np.repeat(rng.integers(0, 3, size=300), 7)).to(
        getattr(ember, dtype_name))
    check(lambda t: ember.unique_consecutive(t, return_inverse=True, return_counts=True), runs,
          what=f"unique_consecutive {dtype_name} runs")
