"""Linear algebra: matmul and its special cases, the add forms, outer, tril/triu,
trace. Compared with NumPy; errors checked by type and message."""
import math

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1234)


def arr(shape, dtype=np.float32, lo=-1.0, hi=1.0):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def T(a):
    return ember.from_numpy(np.array(a, order="C"))


def N(t):
    return t.numpy()


def tol(dtype, k=1):
    if dtype == np.float64:
        return dict(rtol=1e-12, atol=1e-12 * max(k, 1))
    return dict(rtol=1e-5, atol=2e-6 * max(k, 1))


def check(a_np, b_np, out, k=None):
    want = np.matmul(a_np.astype(np.float64), b_np.astype(np.float64))
    k = a_np.shape[-1] if k is None else k
    assert tuple(out.shape) == want.shape
    np.testing.assert_allclose(N(out), want, **tol(a_np.dtype, k))


def strided(base_np, shape, strides, offset=0):
    """The same strided view of `base_np` in NumPy and in ember (element strides)."""
    flat = base_np.reshape(-1)
    e = T(flat).as_strided(shape, strides, offset)
    item = flat.itemsize
    n = np.lib.stride_tricks.as_strided(flat[offset:], shape, [s * item for s in strides])
    return n, e


# ---- matmul: every rank combination and broadcast --------------------------------------------

SHAPES = [
    ((3,), (3,)),                 # dot
    ((2, 3), (3,)),               # mv
    ((3,), (3, 4)),               # vector @ matrix
    ((2, 3), (3, 4)),             # mm
    ((1, 1), (1, 1)),
    ((5, 2, 3), (3, 4)),          # batched @ matrix (folded into one GEMM)
    ((2, 3), (5, 3, 4)),          # matrix @ batched (broadcast by stride 0)
    ((5, 2, 3), (5, 3, 4)),       # bmm-like
    ((1, 2, 3), (5, 3, 4)),       # batch broadcast of size 1
    ((5, 1, 2, 3), (4, 3, 2)),    # batch dims broadcast to (5, 4)
    ((2, 1, 4, 3), (1, 5, 3, 2)),
    ((3,), (5, 3, 4)),            # 1-D @ batched
    ((5, 2, 3), (3,)),            # batched @ 1-D
    ((2, 5, 2, 3), (3,)),
    ((7,), (2, 3, 7, 1)),
    ((4, 3, 1, 7), (7,)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_shapes(sa, sb, dtype):
    a, b = arr(sa, dtype), arr(sb, dtype)
    check(a, b, ember.matmul(T(a), T(b)))
    check(a, b, T(a) @ T(b))
    check(a, b, T(a).matmul(T(b)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(64, 128, 96), (257, 300, 1), (1, 300, 200), (1, 513, 1),
                                   (130, 33, 270), (3, 1, 5)])
def test_matmul_sizes(m, k, n, dtype):
    a, b = arr((m, k), dtype), arr((k, n), dtype)
    check(a, b, ember.mm(T(a), T(b)))


def test_matmul_result_is_new_contiguous_tensor():
    a, b = T(arr((3, 4))), T(arr((4, 5)))
    c = a @ b
    assert c.is_contiguous() and c.dtype == ember.float32 and tuple(c.shape) == (3, 5)


# ---- non-contiguous operands: no-copy paths and the copy fallback ---------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_operands(dtype):
    a, b = arr((5, 7), dtype), arr((5, 6), dtype)
    check(a.T, b, T(a).t() @ T(b))                       # A.t() @ B: column-major A
    c = arr((6, 7), dtype)
    check(a, c.T, T(a) @ T(c).t())                       # A @ B.t()
    d = arr((6, 5), dtype)
    check(a.T, d.T, T(a).t() @ T(d).t())                 # both transposed
    # Vector shapes through GEMV with transposed matrices.
    v = arr((5,), dtype)
    check(a.T, v, T(a).t() @ T(v))
    check(v, a, T(v) @ T(a))
    check(v[None], a, T(v).unsqueeze(0) @ T(a))
    w = arr((7,), dtype)
    check(w, a.T, T(w) @ T(a).t())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leading_dim_slices(dtype):
    base = arr((9, 12), dtype)
    # Columns 2..7 of a wider matrix: row stride 12 (a leading dimension > cols).
    an, ae = strided(base, (9, 5), (12, 1), 2)
    bn = arr((5, 4), dtype)
    check(an, bn, ae @ T(bn))
    check(bn.T, an.T, T(bn).t() @ ae.t())
    # Every other row: row stride 24.
    rn, re_ = strided(base, (4, 12), (24, 1), 1)
    cn = arr((12, 3), dtype)
    check(rn, cn, re_ @ T(cn))
    # Transposed with a leading dim: column-major with column stride 12.
    tn, te = strided(base, (6, 9), (1, 12), 3)
    check(tn, an, te @ ae)
    # Stepped in both dims: not BLAS-friendly, copied.
    sn, se = strided(base, (4, 5), (24, 2))
    check(sn, bn, se @ T(bn))
    check(bn.T, sn.T, T(bn).t() @ se.t())
    # Vector with a stride (a column of a matrix) in mv and dot.
    vn, ve = strided(base, (9,), (12,), 4)
    m = arr((3, 9), dtype)
    check(m, vn, T(m) @ ve)
    check(vn, base[:, 1], ve @ T(base).select(1, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_non_contiguous(dtype):
    a = arr((3, 4, 5), dtype)
    b = arr((3, 4, 6), dtype)
    # a.transpose(1, 2): each batch matrix is column-major.
    check(a.transpose(0, 2, 1), b, T(a).transpose(1, 2) @ T(b))
    # Permuted batches: (3, 4, 5) with strides (5, 15, 1), rows with a leading dim of 15.
    x = arr((4, 3, 5), dtype)
    y = arr((3, 6, 5), dtype)
    check(x.transpose(1, 0, 2), y.transpose(0, 2, 1), T(x).permute(1, 0, 2) @ T(y).transpose(1, 2))
    # Batch as the innermost dim (strides (1, 15, 3)): not BLAS-friendly, copied.
    p = arr((4, 5, 3), dtype)
    c = arr((3, 5, 6), dtype)
    check(p.transpose(2, 0, 1), c, T(p).permute(2, 0, 1) @ T(c))
    # Expanded operands (stride-0 batch and stride-0 inner dims).
    m = arr((4, 5), dtype)
    ones = np.ones((3, 5, 2), dtype)
    check(np.broadcast_to(m, (3, 4, 5)), ones, T(m).expand(3, 4, 5) @ T(ones))
    row = arr((1, 5), dtype)
    check(np.broadcast_to(row, (4, 5)), m.T, T(row).expand(4, 5) @ T(m).t())
    col = arr((5, 1), dtype)
    check(m, np.broadcast_to(col, (5, 3)), T(m) @ T(col).expand(5, 3))
    # A batched product whose batched operand is folded: a non-contiguous batch.
    q = arr((2, 6, 3, 4), dtype)
    check(q.transpose(1, 0, 2, 3), m, T(q).transpose(0, 1) @ T(m))


def test_transposed_operands_are_not_copied():
    # The no-copy path reads through the view; the result must match either way,
    # and the inputs must be left untouched.
    a = arr((64, 32))
    b = arr((64, 48))
    ta, tb = T(a), T(b)
    before = N(ta).copy()
    check(a.T, b, ta.t() @ tb)
    np.testing.assert_array_equal(N(ta), before)


# ---- dtypes: integer and 16-bit floating fallbacks -------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((4, 3), (3,)), ((2, 3), (3, 5)),
                                   ((2, 4, 3), (1, 3, 5)), ((130, 300), (300, 270))])
def test_integer_matmul(dtype, sa, sb):
    a = RNG.integers(0 if dtype == np.uint8 else -2, 3, size=sa).astype(dtype)
    b = RNG.integers(0 if dtype == np.uint8 else -2, 3, size=sb).astype(dtype)
    out = ember.matmul(T(a), T(b))
    want = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dtype)
    assert N(out).dtype == dtype
    np.testing.assert_array_equal(N(out), want)


def test_integer_overflow_wraps():
    a = np.full((1, 2), 2**62, dtype=np.int64)
    b = np.full((2, 1), 2, dtype=np.int64)
    assert N(T(a) @ T(b))[0, 0] == 0  # 2 * 2**63 wraps to 0, as in PyTorch
    c = np.full((1, 3), 100, dtype=np.int8)
    d = np.full((3, 1), 1, dtype=np.int8)
    assert N(T(c) @ T(d))[0, 0] == np.int8(np.int64(300) - 256)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((5, 7), (7,)), ((6, 40), (40, 9)),
                                   ((2, 3, 4), (4, 5)), ((70, 300), (300, 66))])
def test_half_matmul(dt, sa, sb):
    edt = getattr(ember, dt)
    a = T(arr(sa)).to(edt)
    b = T(arr(sb)).to(edt)
    out = a @ b
    assert out.dtype == edt
    an, bn = N(a.to(ember.float32)), N(b.to(ember.float32))
    want = np.matmul(an.astype(np.float64), bn.astype(np.float64))
    eps = 2 ** -8 if dt == "float16" else 2 ** -6  # one final rounding (computed in float)
    np.testing.assert_allclose(N(out.to(ember.float32)), want, rtol=eps, atol=eps * 1e-1 * sa[-1])


def test_half_transposed_and_sliced():
    base = T(arr((8, 10))).to(ember.float16)
    a = base.t()
    b = base.narrow(1, 2, 6)
    out = a @ b
    an = N(base.to(ember.float32))
    want = an.T @ an[:, 2:8]
    np.testing.assert_allclose(N(out.to(ember.float32)), want, rtol=1e-2, atol=1e-2)


def test_bool_matmul_not_implemented():
    a = T(np.ones((2, 2), dtype=bool))
    with pytest.raises(RuntimeError, match="\"matmul\" not implemented for 'bool'"):
        a @ a
    with pytest.raises(RuntimeError, match="\"mm\" not implemented for 'bool'"):
        ember.mm(a, a)


# ---- empty shapes -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
@pytest.mark.parametrize("sa,sb", [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((2, 3), (3, 0)),
                                   ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 2)),
                                   ((0, 2, 3), (3, 4)), ((2, 2, 0), (2, 0, 3)),
                                   ((4, 0, 3), (1, 3, 2))])
def test_empty(sa, sb, dtype):
    a = np.ones(sa, dtype=dtype)
    b = np.ones(sb, dtype=dtype)
    out = ember.matmul(T(a), T(b))
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert tuple(out.shape) == want.shape
    np.testing.assert_array_equal(N(out).astype(np.float64), want)  # k == 0 gives zeros


def test_empty_special_forms():
    z = ember.bmm(T(np.ones((0, 2, 3), np.float32)), T(np.ones((0, 3, 4), np.float32)))
    assert tuple(z.shape) == (0, 2, 4)
    assert N(ember.dot(T(np.ones(0, np.float32)), T(np.ones(0, np.float32)))) == 0
    np.testing.assert_array_equal(
        N(ember.mv(T(np.ones((3, 0), np.float64)), T(np.ones(0, np.float64)))), np.zeros(3))
    inp = T(np.full((2, 3), 2.0, np.float32))
    out = ember.addmm(inp, T(np.ones((2, 0), np.float32)), T(np.ones((0, 3), np.float32)),
                      beta=3, alpha=5)
    np.testing.assert_array_equal(N(out), np.full((2, 3), 6.0))


# ---- mm, bmm, mv, dot, vdot ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_forms(dtype):
    a, b = arr((4, 5), dtype), arr((5, 3), dtype)
    check(a, b, ember.mm(T(a), T(b)))
    check(a, b, T(a).mm(T(b)))
    x, y = arr((6, 4, 5), dtype), arr((6, 5, 3), dtype)
    check(x, y, ember.bmm(T(x), T(y)))
    check(x, y, T(x).bmm(T(y)))
    v = arr((5,), dtype)
    check(a, v, ember.mv(T(a), T(v)))
    check(a, v, T(a).mv(T(v)))
    w = arr((5,), dtype)
    d = ember.dot(T(v), T(w))
    assert d.dim() == 0
    np.testing.assert_allclose(N(d), np.dot(v, w), **tol(dtype, 5))
    np.testing.assert_allclose(N(T(v).dot(T(w))), np.dot(v, w), **tol(dtype, 5))
    np.testing.assert_allclose(N(ember.vdot(T(v), T(w))), np.vdot(v, w), **tol(dtype, 5))


def test_linalg_submodule():
    a, b = arr((2, 3)), arr((3, 2))
    check(a, b, ember.linalg.matmul(T(a), T(b)))


def test_rmatmul():
    a, b = arr((2, 3)), arr((3, 2))
    check(a, b, T(b).__rmatmul__(T(a)))
    assert T(b).__rmatmul__(3) is NotImplemented


# ---- out= -----------------------------------------------------------------------------------------

def test_out_variants():
    a, b = arr((3, 4)), arr((4, 5))
    out = ember.empty(3, 5)
    r = ember.matmul(T(a), T(b), out=out)
    assert r is out
    check(a, b, out)
    out2 = ember.empty(3, 5)
    assert ember.mm(T(a), T(b), out=out2) is out2
    check(a, b, out2)
    x, y = arr((2, 3, 4)), arr((2, 4, 5))
    out3 = ember.empty(2, 3, 5)
    assert ember.bmm(T(x), T(y), out=out3) is out3
    check(x, y, out3)
    out4 = ember.empty(2, 3, 5)
    ember.matmul(T(x), T(y[0]), out=out4)   # folded path into out
    check(x, y[0], out4)
    v = arr((4,))
    out5 = ember.empty(3)
    ember.mv(T(a), T(v), out=out5)
    check(a, v, out5)
    out6 = ember.empty(())
    ember.dot(T(v), T(v), out=out6)
    np.testing.assert_allclose(N(out6), v @ v, rtol=1e-5)


def test_out_non_contiguous_and_nan_prefilled():
    a, b = arr((3, 4)), arr((4, 5))
    base = ember.full((5, 3), float("nan"))
    out = base.t()  # column-major out: computed in a temporary, then copied
    ember.mm(T(a), T(b), out=out)
    check(a, b, out)
    for shape, (sa, sb) in [((3, 5), ((3, 4), (4, 5))), ((3,), ((3, 4), (4,))),
                            ((5,), ((4,), (4, 5)))]:
        a_, b_ = arr(sa), arr(sb)
        o = ember.full(shape, float("nan"))   # beta = 0: garbage in out must not leak
        ember.matmul(T(a_), T(b_), out=o)
        check(a_, b_, o)


def test_out_aliasing_an_input():
    a, b = arr((4, 4)), arr((4, 4))
    ta = T(a.copy())
    ember.mm(ta, T(b), out=ta)  # writes over its own input: computed in a temporary
    check(a, b, ta)
    tb = T(b.copy())
    ember.matmul(T(a), tb, out=tb)
    check(a, b, tb)


def test_out_errors():
    a, b = T(arr((3, 4))), T(arr((4, 5)))
    o = ember.empty(3, 4)
    with pytest.warns(UserWarning, match=r"had shape \[3, 4\], which does not match the required "
                      r"output shape \[2, 3, 5\]"):
        ember.matmul(T(arr((2, 3, 4))), b, out=o)
    assert o.shape == (2, 3, 5)
    with pytest.raises(RuntimeError, match="mm: expected out tensor to have dtype float32, "
                                           "but got float64 instead"):
        ember.mm(a, b, out=ember.empty(3, 5, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.mm(a, b, out=ember.empty(1, 5).expand(3, 5))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not int"):
        ember.mm(a, b, out=3)


# ---- addmm, baddbmm, addmv --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addmm(dtype):
    inp, m1, m2 = arr((3, 5), dtype), arr((3, 4), dtype), arr((4, 5), dtype)
    t = tol(dtype, 4)
    np.testing.assert_allclose(N(ember.addmm(T(inp), T(m1), T(m2))), inp + m1 @ m2, **t)
    np.testing.assert_allclose(N(ember.addmm(T(inp), T(m1), T(m2), beta=0.5, alpha=-2)),
                               0.5 * inp + -2 * (m1 @ m2), **t)
    np.testing.assert_allclose(N(T(inp).addmm(T(m1), T(m2), alpha=3)), inp + 3 * (m1 @ m2), **t)
    # Broadcast input: a row and a scalar-like [1] tensor.
    row = arr((5,), dtype)
    np.testing.assert_allclose(N(ember.addmm(T(row), T(m1), T(m2))), row + m1 @ m2, **t)
    one = arr((1,), dtype)
    np.testing.assert_allclose(N(ember.addmm(T(one), T(m1).contiguous(), T(m2))),
                               one + m1 @ m2, **t)
    # beta = 0 ignores NaN in the input.
    nan = np.full((3, 5), np.nan, dtype)
    np.testing.assert_allclose(N(ember.addmm(T(nan), T(m1), T(m2), beta=0)), m1 @ m2, **t)
    # Transposed operands and out=.
    out = ember.empty(3, 5, dtype=T(inp).dtype)
    ember.addmm(T(inp), T(m1.T.copy()).t(), T(m2.T.copy()).t(), beta=2, out=out)
    np.testing.assert_allclose(N(out), 2 * inp + m1 @ m2, **t)
    # In place, including an input that is not row-major.
    x = T(inp.copy())
    r = x.addmm_(T(m1), T(m2), beta=2, alpha=0.5)
    assert r is x
    np.testing.assert_allclose(N(x), 2 * inp + 0.5 * (m1 @ m2), **t)
    xt = T(inp.T.copy()).t()
    xt.addmm_(T(m1), T(m2))
    np.testing.assert_allclose(N(xt), inp + m1 @ m2, **t)


def test_addmm_integer():
    inp = np.arange(6, dtype=np.int64).reshape(2, 3)
    m1 = np.arange(8, dtype=np.int64).reshape(2, 4)
    m2 = np.arange(12, dtype=np.int64).reshape(4, 3)
    np.testing.assert_array_equal(N(ember.addmm(T(inp), T(m1), T(m2), beta=2, alpha=3)),
                                  2 * inp + 3 * (m1 @ m2))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not "
                                           "be a floating point number."):
        ember.addmm(T(inp), T(m1), T(m2), alpha=0.5)
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point"):
        ember.addmm(T(inp), T(m1), T(m2), beta=0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_baddbmm_addmv(dtype):
    inp, b1, b2 = arr((2, 3, 5), dtype), arr((2, 3, 4), dtype), arr((2, 4, 5), dtype)
    t = tol(dtype, 4)
    np.testing.assert_allclose(N(ember.baddbmm(T(inp), T(b1), T(b2), beta=2, alpha=0.5)),
                               2 * inp + 0.5 * (b1 @ b2), **t)
    row = arr((5,), dtype)
    np.testing.assert_allclose(N(T(row).baddbmm(T(b1), T(b2))), row + b1 @ b2, **t)
    x = T(inp.copy())
    x.baddbmm_(T(b1), T(b2), alpha=-1)
    np.testing.assert_allclose(N(x), inp - b1 @ b2, **t)
    out = ember.empty(2, 3, 5, dtype=x.dtype)
    ember.baddbmm(T(inp), T(b1), T(b2), out=out)
    np.testing.assert_allclose(N(out), inp + b1 @ b2, **t)

    vin, mat, vec = arr((3,), dtype), arr((3, 4), dtype), arr((4,), dtype)
    np.testing.assert_allclose(N(ember.addmv(T(vin), T(mat), T(vec), beta=3, alpha=2)),
                               3 * vin + 2 * (mat @ vec), **t)
    s = np.array(0.25, dtype)  # a 0-d input broadcasts
    np.testing.assert_allclose(N(ember.addmv(T(s), T(mat), T(vec))), s + mat @ vec, **t)
    y = T(vin.copy())
    y.addmv_(T(mat.T.copy()).t(), T(vec))
    np.testing.assert_allclose(N(y), vin + mat @ vec, **t)
    nan = np.full((3,), np.nan, dtype)
    np.testing.assert_allclose(N(ember.addmv(T(nan), T(mat), T(vec), beta=0)), mat @ vec, **t)


def test_add_form_errors():
    f, d = np.float32, np.float64
    with pytest.raises(RuntimeError, match="mat1 must be a matrix, got 1-D tensor"):
        ember.addmm(T(arr((3,))), T(arr((3,))), T(arr((3, 3))))
    with pytest.raises(RuntimeError, match="mat2 must be a matrix, got 3-D tensor"):
        ember.addmm(T(arr((3,))), T(arr((3, 3))), T(arr((1, 3, 3))))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got "
                                           "float64 and float32"):
        ember.addmm(T(arr((3, 3), d)), T(arr((3, 3), f)), T(arr((3, 3), f)))
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype, but got "
                                           "float64 and float32"):
        ember.addmm(T(arr((3, 3), f)), T(arr((3, 3), d)), T(arr((3, 3), f)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"4x5\)"):
        ember.addmm(T(arr((2, 5))), T(arr((2, 3))), T(arr((4, 5))))
    with pytest.raises(RuntimeError, match="must match the existing size|expand"):
        ember.addmm(T(arr((4,))), T(arr((2, 3))), T(arr((3, 5))))
    with pytest.raises(RuntimeError, match=r"addmm_: the input of shape \[5\] is written in place"):
        T(arr((5,))).addmm_(T(arr((2, 3))), T(arr((3, 5))))
    with pytest.raises(RuntimeError, match="Input dtypes must be the same, got: input float64, "
                                           "batch1: float32, batch2: float32"):
        ember.baddbmm(T(arr((2, 2, 2), d)), T(arr((2, 2, 2))), T(arr((2, 2, 2))))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.baddbmm(T(arr((2, 2))), T(arr((2, 2))), T(arr((2, 2, 2))))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 2, 2, 1"):
        ember.addmv(T(arr((3, 1))), T(arr((3, 4))), T(arr((4,))))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(3x4\), vec \(4\)"):
        ember.addmv(T(arr((2,))), T(arr((3, 4))), T(arr((4,))))
    with pytest.raises(TypeError, match=r"addmm\(\): argument 'mat1' \(position 2\) must be "
                                        r"Tensor, not list"):
        ember.addmm(T(arr((2, 2))), [[1.0]], T(arr((2, 2))))


# ---- matmul / mm / bmm / mv / dot errors -----------------------------------------------------

def test_matmul_errors():
    f = T(arr((2, 3)))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but "
                                           "they are 0D and 2D"):
        ember.matmul(T(np.float32(1.0)), f)
    with pytest.raises(RuntimeError, match="but they are 2D and 0D"):
        f @ T(np.float32(1.0))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float32 != float64"):
        f @ T(arr((3, 2), np.float64))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"4x5\)"):
        f @ T(arr((4, 5)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x3 and "
                                           r"4x5\)"):
        T(arr((3,))) @ T(arr((4, 5)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"4x5\) in matmul of shapes \[7, 2, 3\] and \[4, 5\]"):
        T(arr((7, 2, 3))) @ T(arr((4, 5)))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        T(arr((2, 2, 3))) @ T(arr((3, 3, 4)))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(3\), mat \(3x4\), vec \(5\)"):
        T(arr((3, 4))) @ T(arr((5,)))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and "
                                           r"src \[4\] to have the same number of elements"):
        T(arr((3,))) @ T(arr((4,)))
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        ember.matmul(f, 2)
    with pytest.raises(TypeError):
        f @ 2
    with pytest.raises(TypeError):
        2 @ f


def test_mm_bmm_mv_dot_errors():
    f = T(arr((2, 3)))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(T(arr((3,))), f)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        ember.mm(f, T(arr((3,))))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"2x3\)"):
        ember.mm(f, f)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float32 != int64"):
        ember.mm(f, T(np.ones((3, 2), np.int64)))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.bmm(f, T(arr((2, 3, 4))))
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        ember.bmm(T(arr((2, 2, 3))), f)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[2, 4\]\."):
        ember.bmm(T(arr((2, 2, 3))), T(arr((2, 4, 5))))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[1, 3\]\."):
        ember.bmm(T(arr((2, 2, 3))), T(arr((1, 3, 5))))  # bmm does not broadcast
    with pytest.raises(RuntimeError, match="bmm: expected batch1 and batch2 to have the same "
                                           "dtype, but got: float32 != float64"):
        ember.bmm(T(arr((2, 2, 3))), T(arr((2, 3, 5), np.float64)))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 1, 1"):
        ember.mv(T(arr((3,))), T(arr((3,))))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(3\), mat \(3x4\), vec \(5\)"):
        ember.mv(T(arr((3, 4))), T(arr((5,))))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.dot(f, T(arr((3,))))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but "
                                           "found float32 and float64"):
        ember.dot(T(arr((3,))), T(arr((3,), np.float64)))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and "
                                           r"src \[2\] to have the same number of elements, but "
                                           r"got 3 and 2 elements respectively"):
        ember.dot(T(arr((3,))), T(arr((2,))))
    with pytest.raises(TypeError, match=r"dot\(\): argument 'other' \(position 2\) must be Tensor"):
        ember.dot(T(arr((3,))), [1.0, 2.0, 3.0])


# ---- outer ----------------------------------------------------------------------------------------

def test_outer():
    a, b = arr((4,)), arr((3,))
    np.testing.assert_allclose(N(ember.outer(T(a), T(b))), np.outer(a, b), rtol=1e-6)
    np.testing.assert_allclose(N(T(a).ger(T(b))), np.outer(a, b), rtol=1e-6)
    i = np.arange(3, dtype=np.int64)
    r = ember.outer(T(i), T(b))  # promotes like a * b
    assert r.dtype == ember.float32
    np.testing.assert_allclose(N(r), np.outer(i, b), rtol=1e-6)
    out = ember.empty(4, 3)
    ember.outer(T(a), T(b), out=out)
    np.testing.assert_allclose(N(out), np.outer(a, b), rtol=1e-6)
    assert tuple(ember.outer(T(np.ones(0, np.float32)), T(b)).shape) == (0, 3)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        ember.outer(T(arr((2, 2))), T(b))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 0-D"):
        ember.outer(T(a), T(np.float32(1)))


# ---- tril / triu ----------------------------------------------------------------------------------

@pytest.mark.parametrize("diag", [-5, -2, -1, 0, 1, 2, 7])
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 3), (2, 3, 5), (2, 1, 4, 4), (0, 3), (3, 0)])
def test_tril_triu(shape, diag):
    a = arr(shape)
    np.testing.assert_array_equal(N(ember.tril(T(a), diag)), np.tril(a, diag))
    np.testing.assert_array_equal(N(ember.triu(T(a), diagonal=diag)), np.triu(a, diag))
    np.testing.assert_array_equal(N(T(a).tril(diag)), np.tril(a, diag))
    np.testing.assert_array_equal(N(T(a).triu(diag)), np.triu(a, diag))


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.int64, np.float64])
def test_tril_triu_dtypes(dtype):
    a = (RNG.integers(0, 5, size=(3, 4)) + 1).astype(dtype)
    np.testing.assert_array_equal(N(ember.tril(T(a))), np.tril(a))
    np.testing.assert_array_equal(N(ember.triu(T(a), 1)), np.triu(a, 1))
    h = T(a.astype(np.float32)).to(ember.bfloat16)
    np.testing.assert_array_equal(N(ember.tril(h, -1).to(ember.float32)),
                                  np.tril(a.astype(np.float32), -1))


def test_tril_triu_non_contiguous_inplace_out():
    a = arr((5, 4))
    t = T(a).t()  # (4, 5), column-major
    np.testing.assert_array_equal(N(ember.tril(t, 1)), np.tril(a.T, 1))
    x = T(a.copy())
    r = x.triu_(-1)
    assert r is x
    np.testing.assert_array_equal(N(x), np.triu(a, -1))
    y = T(a.T.copy()).t()  # in place through a transposed view
    y.tril_()
    np.testing.assert_array_equal(N(y), np.tril(a))
    out = ember.empty(5, 4)
    assert ember.triu(T(a), 2, out=out) is out
    np.testing.assert_array_equal(N(out), np.triu(a, 2))
    z = T(a.copy())
    ember.tril(z, out=z)  # out is the input itself
    np.testing.assert_array_equal(N(z), np.tril(a))
    sq = T(arr((4, 4)))
    ref = np.tril(N(sq).T)
    ember.tril(sq.t(), out=sq)  # out overlaps the input differently: uses a temporary
    np.testing.assert_array_equal(N(sq), ref)


def test_tril_triu_errors():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ember.tril(T(arr((3,))))
    with pytest.raises(RuntimeError, match="triu_: input tensor must have at least 2 dimensions"):
        T(np.float32(1.0)).triu_()
    with pytest.raises(TypeError):
        ember.tril(T(arr((3, 3))), 1.5)
    o = ember.empty(2, 2)
    with pytest.warns(UserWarning, match=r"had shape \[2, 2\], which does not match"):
        ember.tril(T(arr((3, 3))), out=o)
    assert o.shape == (3, 3)


# ---- trace ----------------------------------------------------------------------------------------

def test_trace():
    for shape in [(3, 3), (2, 5), (5, 2), (0, 3), (1, 1)]:
        a = arr(shape, np.float64)
        r = ember.trace(T(a))
        assert r.dim() == 0 and r.dtype == ember.float64
        np.testing.assert_allclose(N(r), np.trace(a), rtol=1e-12)
    a32 = arr((4, 4))
    np.testing.assert_allclose(N(T(a32).trace()), np.trace(a32.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(N(T(a32).t().trace()), np.trace(a32), rtol=1e-6)
    i = np.arange(9, dtype=np.int8).reshape(3, 3)
    r = ember.trace(T(i))
    assert r.dtype == ember.int64 and r.item() == 12
    assert ember.trace(T(np.eye(3, dtype=bool))).item() == 3
    h = T(a32).to(ember.float16)
    assert ember.trace(h).dtype == ember.float16
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        ember.trace(T(arr((3,))))


# ---- threads and the BLAS ------------------------------------------------------------------------

def test_blas_info_and_threads():
    info = ember._C._blas_info()
    assert set(info) >= {"available", "library", "corename", "threads", "matmul_float32"}
    if info["available"]:
        assert info["library"] == "scipy-openblas32"
        assert info["matmul_float32"] == "blas"
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        a, b = arr((70, 80)), arr((80, 90))
        check(a, b, T(a) @ T(b))
        if info["available"]:
            assert ember._C._blas_info()["threads"] == 1
        ember.set_num_threads(2)
        check(a, b, T(a) @ T(b))
        i, j = np.ones((200, 300), np.int32), np.ones((300, 100), np.int32)
        np.testing.assert_array_equal(N(T(i) @ T(j)), np.full((200, 100), 300))
    finally:
        ember.set_num_threads(old)


def test_large_k_accuracy_float32():
    # float32 sums over a long k stay close to a float64 reference.
    a, b = arr((4, 4096)), arr((4096, 3))
    out = N(T(a) @ T(b))
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(out - want)) < 1e-3 * math.sqrt(4096) * 1e-1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_gemm(dtype):
    # Note [Small GEMM]: m, n, k <= 64 skip the BLAS. Tile remainders (6 rows; 16 float or
    # 8 double columns), every transpose, leading dims wider than the matrix, beta = 0
    # over NaN (not read), beta and alpha, and the 64 edge against NumPy.
    rng = np.random.default_rng(0)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    shapes = [(2, 2, 1), (5, 7, 3), (6, 16, 16), (7, 17, 9), (13, 8, 33), (31, 33, 1),
              (64, 64, 64), (64, 63, 65), (1 + 64, 2, 2), (12, 24, 40)]
    for m, n, k in shapes:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        ea, eb = ember.from_numpy(a), ember.from_numpy(b)
        eat = ember.from_numpy(np.ascontiguousarray(a.T)).t()
        ebt = ember.from_numpy(np.ascontiguousarray(b.T)).t()
        for x, y in [(ea, eb), (eat, eb), (ea, ebt), (eat, ebt)]:
            np.testing.assert_allclose((x @ y).numpy(), ref, rtol=tol, atol=tol * np.sqrt(k))
        wa = ember.from_numpy(rng.standard_normal((m, k + 3)).astype(dtype))[:, 2:k + 2]
        wb = ember.from_numpy(rng.standard_normal((k, n + 5)).astype(dtype))[:, 1:n + 1]
        np.testing.assert_allclose((wa @ wb).numpy(), wa.numpy() @ wb.numpy(), rtol=tol,
                                   atol=tol * np.sqrt(k))
        out = ember.full((m, n + 2), float("nan"), dtype=ea.dtype)[:, 1:n + 1]
        ember.mm(ea, eb, out=out)
        np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol * np.sqrt(k))
        c = rng.standard_normal((m, n)).astype(dtype)
        got = ember.addmm(ember.from_numpy(c), ea, ebt, beta=-0.5, alpha=3.0).numpy()
        np.testing.assert_allclose(got, -0.5 * c + 3.0 * ref, rtol=tol, atol=4 * tol * np.sqrt(k))
    # non-finite values propagate as in any GEMM
    a = np.ones((5, 5), dtype)
    a[2, 3] = np.inf
    got = (ember.from_numpy(a) @ ember.from_numpy(np.ones((5, 4), dtype))).numpy()
    assert np.isinf(got[2]).all() and np.isfinite(np.delete(got, 2, 0)).all()


_SKINNY_SCRIPT = r"""
import numpy as np, ember
rng = np.random.default_rng(0)
F = ember.nn.functional
for dtype, tol in [(np.float32, 3e-6), (np.float64, 1e-14)]:
    # rows 2-8 against k >= 128 (Note [Skinny GEMM]); k tails past every vector width, n
    # below, at and past a tile, and row tiles of 4 with remainders
    for m, n, k in [(2, 1000, 128), (3, 5, 129), (4, 17, 263), (5, 3, 300), (7, 9, 1001),
                    (8, 64, 256), (8, 33, 784), (2, 2, 2049)]:
        x = rng.standard_normal((m, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        ref = x.astype(np.float64) @ w.T.astype(np.float64)
        atol = tol * np.sqrt(k) * 10
        for threads in (1, 2):
            ember.set_num_threads(threads)
            ex, ew, eb = ember.from_numpy(x), ember.from_numpy(w), ember.from_numpy(b)
            np.testing.assert_allclose(F.linear(ex, ew, eb).numpy(), ref + b, rtol=tol, atol=atol)
            np.testing.assert_allclose((ex @ ew.t()).numpy(), ref, rtol=tol, atol=atol)
            # beta = 0 never reads out (NaN stays out), out with a row stride past n
            out = ember.full((m, n + 3), float("nan"), dtype=ex.dtype)[:, 1:n + 1]
            ember.mm(ex, ew.t(), out=out)
            np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=atol)
            c = rng.standard_normal((m, n)).astype(dtype)
            got = ember.addmm(ember.from_numpy(c), ex, ew.t(), beta=-0.5, alpha=3.0).numpy()
            np.testing.assert_allclose(got, -0.5 * c + 3.0 * ref, rtol=tol, atol=4 * atol)
            # row strides past k on both operands (column slices)
            xs = ember.from_numpy(rng.standard_normal((m, k + 5)).astype(dtype))[:, 3:k + 3]
            ws = ember.from_numpy(rng.standard_normal((n, k + 2)).astype(dtype))[:, 1:k + 1]
            np.testing.assert_allclose((xs @ ws.t()).numpy(),
                                       xs.numpy().astype(np.float64) @ ws.numpy().T, rtol=tol,
                                       atol=atol)
            # a batch: bmm against transposed matrices, and a 3-D input to linear
            xb = rng.standard_normal((3, m, k)).astype(dtype)
            wb = rng.standard_normal((3, n, k)).astype(dtype)
            got = ember.bmm(ember.from_numpy(xb), ember.from_numpy(wb).transpose(1, 2)).numpy()
            np.testing.assert_allclose(got, xb.astype(np.float64) @ wb.transpose(0, 2, 1),
                                       rtol=tol, atol=atol)
    # non-finite values stay in their own row and column
    x = np.ones((4, 256), dtype)
    x[1, 7] = np.inf
    w = np.ones((6, 256), dtype)
    w[4, 200] = np.nan
    got = (ember.from_numpy(x) @ ember.from_numpy(w).t()).numpy()
    bad = ~np.isfinite(got)
    assert bad[1].all() and bad[:, 4].all() and bad.sum() == 6 + 4 - 1, bad
print("ok")
"""


@pytest.mark.parametrize("capability", ["default", "best"])
def test_skinny_gemm(capability):
    # Note [Skinny GEMM]: a few rows of a against b stored n x k (Linear's layout) run as
    # folded dot products. Each CPU capability has its own vector width and fold network
    # (4/2 lanes at baseline, 8/4 with AVX2), so the same checks run under each.
    from child_env import run_at_capability
    assert run_at_capability(_SKINNY_SCRIPT, capability).strip() == "ok"


@pytest.fixture
def no_blas():
    """Routes float32/float64 through the C++ fallback kernel, as without a BLAS."""
    ember._C._set_blas_enabled(False)
    try:
        assert ember._C._blas_info()["matmul_float32"] == "fallback"
        yield
    finally:
        ember._C._set_blas_enabled(True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fallback_kernel(no_blas, dtype):
    for sa, sb in SHAPES + [((67, 300), (300, 261)), ((3, 9, 5), (5, 17)), ((1, 1), (1, 1))]:
        a, b = arr(sa, dtype), arr(sb, dtype)
        check(a, b, T(a) @ T(b))
    a, b = arr((9, 12), dtype), arr((9, 7), dtype)
    check(a.T, b, T(a).t() @ T(b))
    check(b.T, a, T(b).t() @ T(a))
    sn, se = strided(a, (4, 5), (24, 2))
    check(sn, b[:5], se @ T(b[:5]))
    inp = arr((12, 7), dtype)
    np.testing.assert_allclose(N(ember.addmm(T(inp), T(a).t(), T(b), beta=0.5, alpha=2)),
                               0.5 * inp + 2 * (a.T @ b), **tol(dtype, 9))
    nan = ember.full((12, 7), float("nan"), dtype=T(inp).dtype)
    ember.mm(T(a).t(), T(b), out=nan)
    check(a.T, b, nan)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_gemm_split_over_the_pool(dtype, threads):
    # Note [GEMM over the pool]: with several threads a large GEMM runs as column panels
    # (n >= m) or row panels of C, one single-threaded BLAS call each. Every operand
    # layout (transposed, sliced leading dims, batched with broadcast), beta = 1 through
    # addmm, and sizes that are not multiples of the panel width give NumPy's result.
    rng = np.random.default_rng(0)
    n0 = ember.get_num_threads()
    tol = 2e-4 if dtype == np.float32 else 1e-11
    try:
        ember.set_num_threads(threads)
        for m, k, n in [(64, 784, 512), (300, 70, 33), (70, 90, 301), (129, 65, 17)]:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            ref = a @ b
            ea, eb = ember.from_numpy(a), ember.from_numpy(b)
            np.testing.assert_allclose((ea @ eb).numpy(), ref, rtol=tol, atol=tol)
            eat = ember.from_numpy(np.ascontiguousarray(a.T)).t()
            ebt = ember.from_numpy(np.ascontiguousarray(b.T)).t()
            np.testing.assert_allclose((eat @ ebt).numpy(), ref, rtol=tol, atol=tol)
            big = ember.from_numpy(rng.standard_normal((m, k + 5)).astype(dtype))
            np.testing.assert_allclose((big[:, 2:k + 2] @ eb).numpy(),
                                       big.numpy()[:, 2:k + 2] @ b, rtol=tol, atol=tol)
            c = rng.standard_normal((m, n)).astype(dtype)
            got = ember.addmm(ember.from_numpy(c), ea, eb, beta=0.5, alpha=2.0).numpy()
            np.testing.assert_allclose(got, 0.5 * c + 2.0 * ref, rtol=tol, atol=tol)
        a = rng.standard_normal((3, 1, 50, 80)).astype(dtype)
        b = rng.standard_normal((4, 80, 200)).astype(dtype)
        got = (ember.from_numpy(a) @ ember.from_numpy(b)).numpy()
        np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol)
        # batches of small matrices run a matrix per task; with transposed, broadcast and
        # sliced operands, baddbmm's beta, and an odd batch count
        # 64x64x64 is both the small-GEMM edge and the panel threshold: whole matrices, never
        # panels (a panel split would compute each matrix once per panel)
        for bs, m, k, n in [(64, 32, 32, 32), (257, 16, 16, 16), (7, 40, 30, 20), (6, 64, 64, 64)]:
            a = rng.standard_normal((bs, m, k)).astype(dtype)
            b = rng.standard_normal((bs, k, n)).astype(dtype)
            ea, eb = ember.from_numpy(a), ember.from_numpy(b)
            np.testing.assert_allclose(ember.bmm(ea, eb).numpy(), a @ b, rtol=tol, atol=tol)
            ebt = ember.from_numpy(np.ascontiguousarray(b.transpose(0, 2, 1))).transpose(1, 2)
            np.testing.assert_allclose(ember.bmm(ea, ebt).numpy(), a @ b, rtol=tol, atol=tol)
            np.testing.assert_allclose((ea @ eb[0]).numpy(), a @ b[0], rtol=tol, atol=tol)
            np.testing.assert_allclose(ember.einsum("bij,bjk->bik", ea, eb).numpy(), a @ b,
                                       rtol=tol, atol=tol)
            c = rng.standard_normal((bs, m, n)).astype(dtype)
            got = ember.baddbmm(ember.from_numpy(c), ea, eb, beta=0.5, alpha=2.0).numpy()
            np.testing.assert_allclose(got, 0.5 * c + 2.0 * (a @ b), rtol=tol, atol=tol)
            wide = ember.from_numpy(rng.standard_normal((bs, m, k + 3)).astype(dtype))
            np.testing.assert_allclose(ember.bmm(wide[:, :, 1:k + 1], eb).numpy(),
                                       wide.numpy()[:, :, 1:k + 1] @ b, rtol=tol, atol=tol)
    finally:
        ember.set_num_threads(n0)
