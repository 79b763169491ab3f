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
