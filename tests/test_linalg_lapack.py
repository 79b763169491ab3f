"""ember.linalg through LAPACK: properties the registry's reference checks do not
cover (factor identities, batching, errors, singular inputs, gradients of gauge-
dependent outputs)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

LA = ember.linalg


def _t(a, device, dtype=ember.float64):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


def test_linalg_error_is_runtime_error():
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_svd_identities(device):
    rng = np.random.default_rng(0)
    for shape in [(5, 3), (3, 5), (2, 4, 4), (3, 0), (0, 2)]:
        a = _t(rng.standard_normal(shape), device)
        U, S, Vh = LA.svd(a, full_matrices=False)
        k = min(shape[-2:])
        assert U.shape[-1] == k and S.shape[-1] == k and Vh.shape[-2] == k
        if k:
            np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ Vh).numpy(), a.numpy(), atol=1e-12)
            np.testing.assert_allclose((U.mT @ U).numpy(), np.broadcast_to(np.eye(k), U.mT.shape[:-1] + (k,)), atol=1e-12)
        Uf, Sf, Vhf = LA.svd(a, full_matrices=True)
        assert Uf.shape[-1] == shape[-2] and Vhf.shape[-1] == shape[-1]
    U, S, V = ember.svd(_t(rng.standard_normal((4, 3)), device))
    assert V.shape == (3, 3)


def test_solve_inv_det_relations(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    A = _t(a, device)
    np.testing.assert_allclose((A @ LA.inv(A)).numpy(), np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-12)
    np.testing.assert_allclose(LA.det(A).numpy(), np.linalg.det(a), rtol=1e-12)
    s, logabs = LA.slogdet(A)
    np.testing.assert_allclose((s * logabs.exp()).numpy(), np.linalg.det(a), rtol=1e-12)
    assert LA.det(_t([[1.0, 2.0], [2.0, 4.0]], device)).item() == 0.0
    inv, info = LA.inv_ex(_t([[1.0, 2.0], [2.0, 4.0]], device))
    assert info.item() > 0
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(_t([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]], device))
    with pytest.raises(RuntimeError, match=r"Batch element 1"):
        LA.inv(_t([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]], device))
    B = _t(rng.standard_normal((3, 4)), device)
    Xr = LA.solve(A[0], B, left=False)  # X A = B
    np.testing.assert_allclose((Xr @ A[0]).numpy(), B.numpy(), atol=1e-12)


def test_errors(device):
    with pytest.raises(RuntimeError, match="square matrices"):
        LA.det(ember.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.inv(ember.ones(3, device=device))
    with pytest.raises(RuntimeError, match="Long"):
        LA.svd(ember.ones(2, 2, dtype=ember.int64, device=device))
    with pytest.raises(LA.LinAlgError, match="positive-definite"):
        LA.cholesky(_t([[1.0, 2.0], [2.0, 1.0]], device))
    L, info = LA.cholesky_ex(_t([[1.0, 2.0], [2.0, 1.0]], device))
    assert info.item() == 2
    with pytest.raises(RuntimeError, match="UPLO"):
        LA.eigh(ember.eye(2, device=device), UPLO="X")
    with pytest.raises(RuntimeError, match="mode"):
        LA.qr(ember.eye(2, device=device), mode="bad")
    with pytest.raises(NotImplementedError):
        LA.eig(ember.eye(2, device=device))


def test_float32_and_batched_eigh(device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 5, 5)).astype(np.float32)
    a = x + np.swapaxes(x, -1, -2)
    L, V = LA.eigh(_t(a, device, ember.float32))
    np.testing.assert_allclose(L.numpy(), np.linalg.eigvalsh(a), atol=1e-4)
    np.testing.assert_allclose((V @ ember.diag_embed(L) @ V.mT).numpy(), a, atol=1e-4)
    assert LA.eigh(_t(a, device, ember.float32), UPLO="U")[0].shape == (3, 5)


def test_gradients_of_factors(device):
    rng = np.random.default_rng(3)
    A = _t(rng.standard_normal((4, 3)), device).requires_grad_()
    # Q R = A is gauge-free; R's diagonal signs are not, so check functions invariant to them.
    assert gradcheck(lambda a: LA.qr(a)[0] @ LA.qr(a)[1], (A,))
    assert gradcheck(lambda a: LA.qr(a)[1].abs(), (A,))
    assert gradgradcheck(lambda a: (LA.qr(a)[1] ** 2).sum(), (A,))
    S = _t(rng.standard_normal((3, 3)), device).requires_grad_()
    assert gradcheck(lambda s: LA.det(s), (S,))
    assert gradgradcheck(lambda s: LA.slogdet(s)[1], (S,))
    assert gradcheck(lambda x: LA.pinv(x), (A,))
    assert gradcheck(lambda x: LA.matrix_norm(x, "nuc"), (A,))
    with pytest.raises(RuntimeError, match="mode='r'"):
        LA.qr(A, mode="r")[1].sum().backward()


def test_top_level_names(device):
    a = _t([[4.0, 1.0], [1.0, 3.0]], device)
    np.testing.assert_allclose(ember.inverse(a).numpy(), np.linalg.inv(a.numpy()))
    np.testing.assert_allclose(a.det().item(), 11.0)
    np.testing.assert_allclose(ember.logdet(a).item(), np.log(11.0))
    assert ember.slogdet(a).sign.item() == 1.0
    np.testing.assert_allclose(ember.cholesky(a).numpy(), np.linalg.cholesky(a.numpy()))
    np.testing.assert_allclose(ember.pinverse(a).numpy(), np.linalg.pinv(a.numpy()), atol=1e-12)
    q, r = ember.qr(a)
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-12)
    np.testing.assert_allclose(LA.matrix_power(a, -1).numpy(), np.linalg.inv(a.numpy()), atol=1e-12)
    assert np.isnan(ember.logdet(_t([[-1.0, 0.0], [0.0, 1.0]], device)).item())


def test_lu_factor_and_solve(device):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    A, B = _t(a, device), _t(b, device)
    LU, piv = LA.lu_factor(A)
    assert piv.dtype == ember.int32 and piv.shape == (2, 4)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, B).numpy(), np.linalg.solve(a, b), atol=1e-12)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, B, adjoint=True).numpy(),
                               np.linalg.solve(np.swapaxes(a, -1, -2), b), atol=1e-12)
    Bl = _t(rng.standard_normal((2, 3, 4)), device)
    np.testing.assert_allclose((LA.lu_solve(LU, piv, Bl, left=False) @ A).numpy(), Bl.numpy(), atol=1e-12)
    Bg = B.clone().requires_grad_()
    assert gradcheck(lambda x: LA.lu_solve(LU, piv, x), (Bg,))
    with pytest.raises(LA.LinAlgError, match="is zero"):
        LA.lu_factor(_t([[1.0, 2.0], [2.0, 4.0]], device))
    with pytest.raises(NotImplementedError, match="lu_factor"):
        LA.lu_factor(A.clone().requires_grad_())[0].sum().backward()


# ---- batches on the thread pool (Note [Batched LAPACK]) -------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_batched_svd_solve_on_the_pool(threads, device):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 33, 6, 5))
    sq = rng.standard_normal((2, 33, 5, 5)) + 5 * np.eye(5)
    b = rng.standard_normal((2, 33, 5, 3))
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for dt, tol in ((ember.float64, 1e-10), (ember.float32, 1e-4)):
            A = _t(a, device, dt)
            U, S, Vh = LA.svd(A, full_matrices=False)
            np.testing.assert_allclose(S.double().numpy(), np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)
            np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ Vh).double().numpy(), a, rtol=tol, atol=tol)
            Uf, Sf, Vhf = LA.svd(A, full_matrices=True)
            assert Uf.shape == (2, 33, 6, 6) and Vhf.shape == (2, 33, 5, 5)
            np.testing.assert_allclose((Uf.mT @ Uf).double().numpy(),
                                       np.broadcast_to(np.eye(6), (2, 33, 6, 6)), atol=tol)
            np.testing.assert_allclose(LA.svdvals(A).double().numpy(), S.double().numpy(), rtol=tol, atol=tol)
            X = LA.solve(_t(sq, device, dt), _t(b, device, dt))
            np.testing.assert_allclose(X.double().numpy(), np.linalg.solve(sq, b), rtol=tol, atol=tol)
            # a batch broadcast against one matrix
            X1 = LA.solve(_t(sq[0, 0], device, dt), _t(b, device, dt))
            np.testing.assert_allclose(X1.double().numpy(), np.linalg.solve(sq[0, 0], b), rtol=tol, atol=tol)
        # the first singular matrix in batch order is the one reported, however the pool split it
        bad = np.broadcast_to(np.eye(3), (40, 3, 3)).copy()
        bad[29] = [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]
        bad[35] = 0.0
        with pytest.raises(LA.LinAlgError, match=r"\(Batch element 29\): The solver failed because the input "
                                                 r"matrix is singular"):
            LA.solve(_t(bad, device), _t(np.ones((40, 3, 1)), device))
    finally:
        ember.set_num_threads(old)


def test_svd_gradients_batched(device):
    rng = np.random.default_rng(12)
    a = _t(rng.standard_normal((3, 4, 3)), device).requires_grad_()
    assert gradcheck(lambda x: LA.svdvals(x), (a,))
    assert gradcheck(lambda x: LA.solve(x @ x.mT + 3 * ember.eye(4, dtype=ember.float64, device=device),
                                        x), (a,))
