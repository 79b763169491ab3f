"""ember.linalg on CUDA (backends/cuda/linalg.cu: cuSOLVER / cuBLAS behind the LAPACK stubs
of kernels/stubs/lapack.h) against the CPU's LAPACK: solve, inv, det, slogdet, cholesky,
qr, eigh / eigvalsh, svd / svdvals, lu_factor / lu_solve, solve_triangular and the
composites built on them (lstsq, pinv, matrix_rank, matrix_norm, cond, matrix_power with a
negative power), in float32 and float64, unbatched and batched (small batches that take the
batched cuBLAS / cuSOLVER routines and large matrices that loop over the batch), on empty,
1x1, tall and wide matrices and non-contiguous inputs; singular and non-positive-definite
inputs raise the same LinAlgError; gradients of solve, inv, det, cholesky, qr, eigh and svd.
Factors that are unique only up to signs (Q, eigenvectors, singular vectors) are compared
through what they determine: the reconstruction of A, orthonormality, and |columns|.

How these tests run on each device: device_compare.py.
"""
import numpy as np
import pytest
from device_compare import (
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

REAL = ["float32", "float64"]
# cuSOLVER and LAPACK order their floating-point operations differently.
LTOL = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}
# Square shapes: empty, 1x1, small and batched (the batched routines), one large matrix and a
# small batch of large ones (the looped single-matrix routines).
SQUARE = [(0, 0), (1, 1), (5, 5), (3, 4, 4), (2, 3, 6, 6), (0, 3, 3), (40, 8, 8), (70, 70),
          (2, 33, 33)]
RECT = [(0, 3), (3, 0), (1, 1), (6, 4), (4, 6), (2, 7, 3), (2, 3, 7), (3, 40, 20), (2, 20, 40),
        (50, 35)]


def tol(dtype_name, scale=1.0):
    r, a = LTOL[dtype_name]
    return r * scale, a * scale


def well_conditioned(shape, dtype_name, rng):
    """Random square matrices with a dominant diagonal (condition number ~ 1-10)."""
    a = make(shape, "float64", rng, -1.0, 1.0)
    n = shape[-1]
    if n:
        a = a + ember.eye(n, dtype=ember.float64) * (2.0 * n ** 0.5 + 1.0)
    return a.to(getattr(ember, dtype_name))


def spd(shape, dtype_name, rng):
    a = make(shape, "float64", rng, -1.0, 1.0)
    n = shape[-1]
    m = a @ a.mT
    if n:
        m = m + ember.eye(n, dtype=ember.float64) * n
    return m.to(getattr(ember, dtype_name))


def symmetric(shape, dtype_name, rng):
    a = make(shape, "float64", rng, -1.0, 1.0)
    return ((a + a.mT) * 0.5).to(getattr(ember, dtype_name))


def assert_close_np(expected, actual, tolerance, what=""):
    np.testing.assert_allclose(as_numpy(actual), as_numpy(expected), rtol=tolerance[0],
                               atol=tolerance[1] * 10, err_msg=what)


def on_dev(t):
    assert t.device.type == ember.device(cmp_dev()).type
    return t


# ---- solve / inv / det ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", SQUARE)
def test_solve_inv_det(shape, dtype_name):
    rng = seeded("solve", shape, dtype_name)
    A = well_conditioned(shape, dtype_name, rng)
    n = shape[-1]
    B = make(shape[:-1] + (3,), dtype_name, rng)
    t = tol(dtype_name, 10)
    check(ember.linalg.solve, A, B, tol=t, what="solve")
    check(lambda a, b: ember.linalg.solve(a, b, left=False), A, B.mT, tol=t, what="solve right")
    check(ember.linalg.solve, A, make(shape[:-1], dtype_name, rng), tol=t, what="solve vector")
    check(ember.linalg.inv, A, tol=t, what="inv")
    check(ember.linalg.inv_ex, A, tol=t, what="inv_ex")
    check(ember.inverse, A, tol=t, what="inverse")
    check(ember.linalg.det, A, tol=tol(dtype_name, 50), what="det")
    check(ember.linalg.slogdet, A, tol=t, what="slogdet")
    check(ember.logdet, A, tol=t, what="logdet")
    if n:
        # Negative determinants: swap two rows (sign from the pivots) or negate one.
        Aneg = A.clone()
        Aneg[..., 0, :] = -Aneg[..., 0, :]
        check(ember.linalg.slogdet, Aneg, tol=t, what="slogdet negative")
        check(ember.linalg.det, Aneg, tol=tol(dtype_name, 50), what="det negative")
        check(ember.logdet, Aneg, tol=t, what="logdet negative")


@pytest.mark.parametrize("dtype_name", REAL)
def test_solve_broadcast_and_noncontiguous(dtype_name):
    rng = seeded("solve-bc", dtype_name)
    A = well_conditioned((3, 1, 5, 5), dtype_name, rng)
    B = make((4, 5, 2), dtype_name, rng)
    t = tol(dtype_name, 10)
    check(ember.linalg.solve, A, B, tol=t, what="broadcast batch")
    An = well_conditioned((4, 10, 10), dtype_name, rng)[..., ::2, ::2]  # stepped slices
    Bn = noncontig((4, 5, 3), dtype_name, rng)
    check(ember.linalg.solve, An, Bn, tol=t, what="non-contiguous")
    check(ember.linalg.eigvalsh, An + An.mT, tol=t, what="eigvalsh non-contiguous")
    check(ember.linalg.svdvals, An, tol=t, what="svdvals non-contiguous")
    check(ember.linalg.solve, A.mT, B, tol=t, what="transposed A")


@pytest.mark.parametrize("dtype_name", REAL)
def test_large_batched_square(dtype_name):
    # n >= 512 with a batch: the looped cuSOLVER getrf / getrs and cuBLAS trsm.
    rng = seeded("large", dtype_name)
    A = well_conditioned((2, 520, 520), dtype_name, rng)
    B = make((2, 520, 2), dtype_name, rng)
    t = tol(dtype_name, 100)
    check(ember.linalg.solve, A, B, tol=t, what="solve n=520")
    check(ember.linalg.slogdet, A, tol=t, what="slogdet n=520")
    check(lambda a, b: ember.linalg.solve_triangular(a, b, upper=True), A.triu(), B, tol=t,
          what="solve_triangular n=520")


@pytest.mark.parametrize("dtype_name", REAL)
def test_singular(dtype_name):
    rng = seeded("singular", dtype_name)
    A = well_conditioned((3, 4, 4), dtype_name, rng)
    A[1, :, 2] = 0.0  # batch element 1 exactly singular: U[3, 3] == 0 after pivoting
    B = make((3, 4, 2), dtype_name, rng)
    for fn in (ember.linalg.solve, ):
        check(fn, A, B, what="solve singular")
    check(ember.linalg.inv, A, what="inv singular")
    check(ember.linalg.lu_factor, A, what="lu_factor singular")
    # inv_ex without check_errors: NaN inverse and info 1 everywhere, as on the CPU.
    check(ember.linalg.inv_ex, A, what="inv_ex singular")
    t = tol(dtype_name, 10)
    check(ember.linalg.det, A, tol=t, what="det singular")
    check(ember.linalg.slogdet, A, tol=t, what="slogdet singular")
    # Same message (the batch element named) on both devices.
    msgs = []
    for a, b in ((A, B), to_dev((A, B))):
        with pytest.raises(ember.linalg.LinAlgError) as info:
            ember.linalg.solve(a, b)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "(Batch element 1)" in msgs[0]


# ---- LU -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", SQUARE)
def test_lu_factor_solve(shape, dtype_name):
    rng = seeded("lu", shape, dtype_name)
    A = make(shape, dtype_name, rng)  # random: pivoting matters
    n = shape[-1]
    if n:
        A = A + ember.eye(n, dtype=A.dtype) * 0.1
    t = tol(dtype_name, 100)
    LU, piv = ember.linalg.lu_factor(A)
    got = check(ember.linalg.lu_factor, A, tol=t, what="lu_factor")
    assert got is not None
    B = make(shape[:-1] + (2,), dtype_name, rng)
    for adjoint in (False, True):
        for left in (True, False):
            b = B if left else B.mT
            check(lambda lu, p, bb: ember.linalg.lu_solve(lu, p, bb, left=left, adjoint=adjoint),
                  LU, piv, b, tol=t, what=f"lu_solve left={left} adjoint={adjoint}")


def test_lu_solve_errors():
    rng = seeded("lu-errors")
    A = well_conditioned((4, 4), "float64", rng)
    LU, piv = ember.linalg.lu_factor(A)
    check(ember.linalg.lu_solve, LU, piv.to(ember.int64), make((4, 1), "float64", rng),
          what="int64 pivots")
    check(ember.linalg.lu_solve, LU, piv, make((3, 1), "float64", rng), what="shape")
    check(ember.linalg.lu_solve, LU, piv, make((4, 1), "float32", rng), what="dtype")


# ---- triangular solve ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 5), (3, 6, 6), (40, 4, 4), (60, 60)])
def test_solve_triangular(shape, dtype_name):
    rng = seeded("trsm", shape, dtype_name)
    A = well_conditioned(shape, dtype_name, rng)
    B = make(shape[:-1] + (3,), dtype_name, rng)
    t = tol(dtype_name, 10)
    for upper in (True, False):
        for unit in (False, True):
            Tm = A.triu() if upper else A.tril()
            check(lambda a, b: ember.linalg.solve_triangular(a, b, upper=upper,
                                                             unitriangular=unit),
                  Tm, B, tol=t, what=f"upper={upper} unit={unit}")
            check(lambda a, b: ember.linalg.solve_triangular(a, b, upper=upper, left=False,
                                                             unitriangular=unit),
                  Tm, B.mT, tol=t, what=f"right upper={upper} unit={unit}")


# ---- Cholesky -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", SQUARE)
def test_cholesky(shape, dtype_name):
    rng = seeded("chol", shape, dtype_name)
    A = spd(shape, dtype_name, rng)
    t = tol(dtype_name, 10)
    check(ember.linalg.cholesky, A, tol=t, what="cholesky")
    check(lambda a: ember.linalg.cholesky(a, upper=True), A, tol=t, what="cholesky upper")
    check(ember.linalg.cholesky_ex, A, tol=t, what="cholesky_ex")
    check(ember.cholesky, A, tol=t, what="torch.cholesky")


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", [(3, 4, 4), (40, 5, 5), (2, 300, 300)])
def test_cholesky_not_positive_definite(shape, dtype_name):
    rng = seeded("chol-npd", shape, dtype_name)
    A = spd(shape, dtype_name, rng)
    A[1, 2, 2] = -1.0  # leading minor of order 3 of batch element 1 fails
    check(ember.linalg.cholesky, A, what="cholesky not PD")
    msgs = []
    for a in (A, to_dev(A)):
        with pytest.raises(ember.linalg.LinAlgError) as info:
            ember.linalg.cholesky(a)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "order 3" in msgs[0]
    # check_errors=False: info marks the failing matrix (the partial factor is not compared).
    _, info_cpu = ember.linalg.cholesky_ex(A)
    _, info_dev = ember.linalg.cholesky_ex(to_dev(A))
    assert_same(info_cpu, on_dev(info_dev), what="cholesky_ex info")


# ---- QR -------------------------------------------------------------------------------------


def _abs(t):
    return t.abs() if t.numel() else t


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", RECT)
def test_qr(shape, dtype_name):
    rng = seeded("qr", shape, dtype_name)
    A = make(shape, dtype_name, rng)
    Ad = to_dev(A)
    t = tol(dtype_name, 20)
    m, n = shape[-2], shape[-1]
    for mode in ("reduced", "complete", "r"):
        Q, R = ember.linalg.qr(A, mode=mode)
        Qd, Rd = ember.linalg.qr(Ad, mode=mode)
        assert tuple(Qd.shape) == tuple(Q.shape) and tuple(Rd.shape) == tuple(R.shape), mode
        on_dev(Rd)
        # R is unique up to the signs of its rows (LAPACK and cuSOLVER share the Householder
        # convention, but compare magnitudes anyway).
        assert_close_np(_abs(R), _abs(Rd), t, f"|R| {mode}")
        if mode == "r":
            continue
        on_dev(Qd)
        if Q.numel() and R.numel():
            assert_close_np(A, Qd @ Rd, t, f"Q R {mode}")
        k = Qd.shape[-1]
        eye = ember.eye(k, dtype=A.dtype).expand(*Qd.shape[:-2], k, k)
        assert_close_np(eye, Qd.mT @ Qd, t, f"Q^T Q {mode}")
        kk = min(m, n)  # the columns of Q that R determines
        assert_close_np(_abs(Q[..., :kk]), _abs(Qd[..., :kk]), t, f"|Q| {mode}")
    Q, R = ember.qr(A)
    Qd, Rd = ember.qr(Ad)
    assert tuple(Qd.shape) == tuple(Q.shape) and tuple(Rd.shape) == tuple(R.shape)
    assert_close_np(_abs(R), _abs(Rd), t, "torch.qr |R|")


# ---- eigh -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", SQUARE)
def test_eigh(shape, dtype_name):
    rng = seeded("eigh", shape, dtype_name)
    A = symmetric(shape, dtype_name, rng)
    t = tol(dtype_name, 50)
    for uplo in ("L", "U"):
        # Only the `uplo` triangle is read: garbage in the other one.
        Ag = A.clone()
        if shape[-1] > 1:
            junk = make(shape, dtype_name, rng)
            Ag = A.triu() + junk.tril(-1) if uplo == "U" else A.tril() + junk.triu(1)
        check(lambda a: ember.linalg.eigvalsh(a, UPLO=uplo), Ag, tol=t, what=f"eigvalsh {uplo}")
        w, V = ember.linalg.eigh(Ag, UPLO=uplo)
        wd, Vd = ember.linalg.eigh(to_dev(Ag), UPLO=uplo)
        assert_same(w, on_dev(wd), tol=t, what="eigenvalues")
        assert tuple(Vd.shape) == tuple(V.shape)
        if V.numel():
            assert_close_np(A, (Vd * wd.unsqueeze(-2)) @ Vd.mT, t, "V diag(w) V^T")
            n = shape[-1]
            assert_close_np(ember.eye(n, dtype=A.dtype).expand(*shape), Vd.mT @ Vd, t, "V^T V")
            # Random symmetric matrices have distinct eigenvalues: columns equal up to sign.
            assert_close_np(_abs(V), _abs(Vd), tol(dtype_name, 200), "|V|")


@pytest.mark.parametrize("dtype_name", REAL)
def test_eigh_repeated_eigenvalues(dtype_name):
    A = ember.eye(4, dtype=getattr(ember, dtype_name)).expand(3, 4, 4).contiguous() * 2.0
    check(ember.linalg.eigvalsh, A, tol=tol(dtype_name, 10), what="eigvalsh of 2I")
    wd, Vd = ember.linalg.eigh(to_dev(A))
    assert_close_np(A, (Vd * wd.unsqueeze(-2)) @ Vd.mT, tol(dtype_name, 10), "eigh of 2I")


def test_eigh_bad_uplo():
    A = ember.eye(3)
    check(lambda a: ember.linalg.eigh(a, UPLO="X"), A, what="uplo")
    check(ember.linalg.eigh, make((2, 3), "float32", seeded("eigh-rect")), what="not square")
    check(ember.linalg.eigh, ember.eye(3, dtype=ember.int64), what="int64 input")


# ---- SVD ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", RECT + [(40, 8, 8)])
def test_svd(shape, dtype_name):
    rng = seeded("svd", shape, dtype_name)
    A = make(shape, dtype_name, rng)
    t = tol(dtype_name, 50)
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    check(ember.linalg.svdvals, A, tol=t, what="svdvals")
    for full in (False, True):
        U, S, Vh = ember.linalg.svd(A, full_matrices=full)
        Ud, Sd, Vhd = ember.linalg.svd(to_dev(A), full_matrices=full)
        assert_same(S, on_dev(Sd), tol=t, what="S")
        assert tuple(Ud.shape) == tuple(U.shape) and tuple(Vhd.shape) == tuple(Vh.shape)
        on_dev(Ud)
        on_dev(Vhd)
        if k:
            Uk, Vhk = Ud[..., :k], Vhd[..., :k, :]
            assert_close_np(A, (Uk * Sd.unsqueeze(-2)) @ Vhk, t, f"U S Vh full={full}")
            # Random matrices: distinct singular values, vectors equal up to sign.
            assert_close_np(_abs(U[..., :k]), _abs(Uk), tol(dtype_name, 200), "|U|")
            assert_close_np(_abs(Vh[..., :k, :]), _abs(Vhk), tol(dtype_name, 200), "|Vh|")
        if Ud.numel():
            mu = Ud.shape[-1]
            assert_close_np(ember.eye(mu, dtype=A.dtype).expand(*Ud.shape[:-2], mu, mu),
                            Ud.mT @ Ud, t, "U^T U")
        if Vhd.numel():
            nv = Vhd.shape[-2]
            assert_close_np(ember.eye(nv, dtype=A.dtype).expand(*Vhd.shape[:-2], nv, nv),
                            Vhd @ Vhd.mT, t, "Vh Vh^T")
    # torch.svd returns V.
    U, S, V = ember.svd(A)
    Ud, Sd, Vd = ember.svd(to_dev(A))
    assert_same(S, Sd, tol=t, what="torch.svd S")
    assert tuple(Vd.shape) == tuple(V.shape)


# ---- composites -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (6, 4), (4, 6), (2, 7, 3), (3, 5, 5)])
def test_composites(shape, dtype_name):
    rng = seeded("composites", shape, dtype_name)
    A = make(shape, dtype_name, rng)
    t = tol(dtype_name, 100)
    check(ember.linalg.pinv, A, tol=t, what="pinv")
    check(ember.pinverse, A, tol=t, what="pinverse")
    check(ember.linalg.matrix_rank, A, what="matrix_rank")
    B = make(shape[:-1] + (2,), dtype_name, rng)
    check(lambda a, b: ember.linalg.lstsq(a, b).solution, A, B, tol=t, what="lstsq")
    check(lambda a, b: ember.linalg.lstsq(a, b).rank, A, B, what="lstsq rank")
    if shape[-1] and shape[-2]:
        for ordv in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")):
            check(lambda a: ember.linalg.matrix_norm(a, ord=ordv), A, tol=t,
                  what=f"matrix_norm {ordv}")
        check(ember.linalg.cond, A, tol=tol(dtype_name, 1000), what="cond")
    if shape[-1] == shape[-2] and shape[-1]:
        W = well_conditioned(shape, dtype_name, rng)
        check(lambda a: ember.linalg.cond(a, "fro"), W, tol=t, what="cond fro")
        check(lambda a: ember.linalg.matrix_power(a, -3), W, tol=t, what="matrix_power -3")


@pytest.mark.parametrize("dtype_name", REAL)
def test_rank_deficient(dtype_name):
    rng = seeded("rank", dtype_name)
    a = make((6, 2), dtype_name, rng)
    A = a @ make((2, 5), dtype_name, rng)  # rank 2
    check(ember.linalg.matrix_rank, A, what="rank 2")
    check(ember.linalg.pinv, A, tol=tol(dtype_name, 1000), what="pinv rank 2")


# ---- input checks ---------------------------------------------------------------------------


def test_input_errors():
    rng = seeded("errors")
    check(ember.linalg.inv, make((3, 3), "int64", rng), what="int64")
    check(ember.linalg.inv, make((3, 3), "float16", rng), what="float16")
    check(ember.linalg.inv, make((3, 4), "float64", rng), what="not square")
    check(ember.linalg.inv, make((3,), "float64", rng), what="1-d")
    check(ember.linalg.solve, make((3, 3), "float64", rng), make((4, 1), "float64", rng),
          what="shape")
    check(ember.linalg.solve, make((3, 3), "float64", rng), make((3, 1), "float32", rng),
          what="dtype")
    check(ember.linalg.cholesky, make((2, 3), "float64", rng), what="cholesky not square")
    check(lambda a: ember.linalg.qr(a, mode="bad"), make((3, 3), "float64", rng), what="qr mode")


# ---- gradients ------------------------------------------------------------------------------


def _grads(fn, *inputs):
    """fn on leaf copies of `inputs` on the CPU and on the device: (CPU grads, device grads)."""
    out = []
    for xs in (inputs, to_dev(inputs)):
        leaves = [x.detach().clone().requires_grad_(True) for x in xs]
        fn(*leaves).backward()
        out.append([x.grad for x in leaves])
    return out


@pytest.mark.parametrize("dtype_name", REAL)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (40, 3, 3)])
def test_gradients(shape, dtype_name):
    rng = seeded("grad", shape, dtype_name)
    A = well_conditioned(shape, dtype_name, rng)
    B = make(shape[:-1] + (2,), dtype_name, rng)
    S_ = spd(shape, dtype_name, rng)
    Sym = symmetric(shape, dtype_name, rng)
    W = make(shape, dtype_name, rng)  # fixed weights
    Wd = to_dev(W)
    t = tol(dtype_name, 200)

    def wfor(x):
        return W if x.device.type == "cpu" else Wd

    cases = {
        "solve": (lambda a, b: (ember.linalg.solve(a, b) * b).sum(), (A, B)),
        "inv": (lambda a: (ember.linalg.inv(a) * wfor(a)).sum(), (A,)),
        "det": (lambda a: ember.linalg.det(a).sum(), (A,)),
        "slogdet": (lambda a: ember.linalg.slogdet(a).logabsdet.sum(), (A,)),
        "cholesky": (lambda a: (ember.linalg.cholesky(a) * wfor(a)).sum(), (S_,)),
        # Sign-invariant functions of the factors.
        "qr": (lambda a: ((ember.linalg.qr(a).Q ** 2) * wfor(a)).sum()
               + (ember.linalg.qr(a).R ** 2).sum(), (A,)),
        "eigh": (lambda a: (ember.linalg.eigh(a).eigenvalues ** 2).sum()
                 + ((ember.linalg.eigh(a).eigenvectors ** 2) * wfor(a)).sum(), (Sym,)),
        "svd": (lambda a: ember.linalg.svd(a).S.sum()
                + ((ember.linalg.svd(a).U ** 2) * wfor(a)).sum(), (A,)),
        "solve_triangular": (lambda a, b: (ember.linalg.solve_triangular(a, b, upper=True) * b)
                             .sum(), (A.triu(), B)),
    }
    for name, (fn, inputs) in cases.items():
        cpu, dev = _grads(fn, *inputs)
        for g_cpu, g_dev in zip(cpu, dev):
            assert_same(g_cpu, g_dev, tol=t, what=f"grad {name}")
