"""Sparse COO math and gradients: products, elementwise ops, structural ops, sum, softmax,
autograd (masked and strided gradients, gradcheck with sparse inputs), nn.Embedding(sparse=True)
and the optimizers that step with sparse gradients."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def rand_sparse(shape, nnz, device, *, dtype=ember.float64, seed=0, dup=False, dense_dims=0,
                requires_grad=False):
    rng = np.random.default_rng(seed)
    sd = len(shape) - dense_dims
    total = int(np.prod(shape[:sd]))
    lin = rng.choice(total, size=min(nnz, total), replace=False)
    if dup:
        lin = np.concatenate([lin, lin[: len(lin) // 2]])
        rng.shuffle(lin)
    idx = np.stack(np.unravel_index(lin, shape[:sd])).reshape(sd, -1)
    vals = rng.standard_normal((idx.shape[1],) + tuple(shape[sd:]))
    s = ember.sparse_coo_tensor(ember.tensor(idx, device=device),
                                ember.tensor(vals, device=device, dtype=dtype), shape)
    if not dup:
        s = s.coalesce()
    return s.requires_grad_(requires_grad)


def dense(t):
    t = t.detach()
    return (t.to_dense() if t.is_sparse else t).cpu().numpy()


def randn(*shape, device="cpu", dtype=ember.float64, seed=1, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a, dtype=dtype, device=device).requires_grad_(requires_grad)


# ---- products ----------------------------------------------------------------------------

@pytest.mark.parametrize("dup", [False, True])
def test_sparse_dense_products(dup, device):
    s = rand_sparse((6, 5), 12, device, dup=dup)
    d = randn(5, 4, device=device)
    ref = dense(s) @ dense(d)
    for r in (ember.sparse.mm(s, d), ember.mm(s, d), ember.matmul(s, d), s @ d, ember.spmm(s, d),
              s.mm(d), ember.sparse.mm(s, d.t().contiguous().t())):
        assert not r.is_sparse
        np.testing.assert_allclose(dense(r), ref, rtol=1e-12, atol=1e-12)
    v = randn(5, device=device)
    np.testing.assert_allclose(dense(s @ v), dense(s) @ dense(v), atol=1e-12)
    w = randn(3, 6, device=device)
    np.testing.assert_allclose(dense(w @ s), dense(w) @ dense(s), atol=1e-12)
    np.testing.assert_allclose(dense(ember.sparse.mm(w, s)), dense(w) @ dense(s), atol=1e-12)
    m = randn(6, 4, device=device, seed=3)
    np.testing.assert_allclose(dense(ember.sparse.addmm(m, s, d, beta=0.5, alpha=-2.0)),
                               0.5 * dense(m) - 2.0 * ref, atol=1e-12)
    np.testing.assert_allclose(dense(ember.addmm(m, s, d)), dense(m) + ref, atol=1e-12)


def test_sparse_sparse_mm(device):
    a = rand_sparse((5, 6), 9, device, dup=True)
    b = rand_sparse((6, 4), 8, device, seed=3)
    r = ember.sparse.mm(a, b)
    assert r.is_sparse and r.is_coalesced()
    np.testing.assert_allclose(dense(r), dense(a) @ dense(b), atol=1e-12)
    np.testing.assert_allclose(dense(a @ b), dense(a) @ dense(b), atol=1e-12)


def test_spmm_dtypes_and_threads(device):
    s = rand_sparse((300, 200), 3000, device, dtype=ember.float32, dup=True)
    d = randn(200, 33, device=device, dtype=ember.float32)
    ref = dense(s).astype(np.float64) @ dense(d).astype(np.float64)
    n = ember.get_num_threads()
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            np.testing.assert_allclose(dense(s @ d), ref, rtol=1e-4, atol=1e-4)
    finally:
        ember.set_num_threads(n)
    si = ember.sparse_coo_tensor(s._indices(), ember.ones(s._nnz(), dtype=ember.int64, device=device),
                                 s.shape)
    di = ember.ones(200, 3, dtype=ember.int64, device=device)
    np.testing.assert_array_equal(dense(si @ di), (dense(si) @ dense(di)))


# ---- elementwise -------------------------------------------------------------------------

def test_add_sub(device):
    a = rand_sparse((4, 5), 7, device)
    b = rand_sparse((4, 5), 6, device, seed=2)
    d = randn(4, 5, device=device)
    r = a + b
    assert r.is_sparse and r.is_coalesced()
    np.testing.assert_allclose(dense(r), dense(a) + dense(b))
    np.testing.assert_allclose(dense(a - b), dense(a) - dense(b))
    np.testing.assert_allclose(dense(ember.add(a, b, alpha=3)), dense(a) + 3 * dense(b))
    u = rand_sparse((4, 5), 6, device, seed=4, dup=True)
    assert not (a + u).is_coalesced()
    np.testing.assert_allclose(dense(a + u), dense(a) + dense(u))
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead."):
        a + d
    for r, ref in ((d + a, dense(d) + dense(a)), (d - a, dense(d) - dense(a))):
        assert not r.is_sparse
        np.testing.assert_allclose(dense(r), ref)
    x = d.clone()
    x.add_(a, alpha=2)
    np.testing.assert_allclose(dense(x), dense(d) + 2 * dense(a))
    y = a.clone()
    y.add_(b)
    assert y.is_sparse
    np.testing.assert_allclose(dense(y), dense(a) + dense(b))
    with pytest.raises(RuntimeError, match=r"add: expected sizes of 'self' and 'other' to match, "
                                           r"but \[4, 5\] != \[5, 4\]"):
        a + rand_sparse((5, 4), 3, device)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        a.clone().add_(d)


def test_mul_div_neg_unary(device):
    a = rand_sparse((4, 5), 8, device, dup=True)
    b = rand_sparse((4, 5), 9, device, seed=2)
    d = randn(4, 5, device=device)
    for r, ref in ((a * 2.5, dense(a) * 2.5), (2.5 * a, 2.5 * dense(a)), (a / 4, dense(a) / 4),
                   (-a, -dense(a)), (a * d, dense(a) * dense(d)), (d * a, dense(d) * dense(a)),
                   (a * b, dense(a) * dense(b)), (a.abs(), np.abs(dense(a))),
                   (b.abs().sqrt(), np.sqrt(np.abs(dense(b)))),
                   (ember.tanh(a), np.tanh(dense(a)))):
        assert r.is_sparse
        np.testing.assert_allclose(dense(r), ref, atol=1e-12)
    ab = a * b
    assert ab.is_coalesced() and ab._nnz() <= min(a.coalesce()._nnz(), b._nnz())
    ints = ember.sparse_coo_tensor([[0, 2]], [3, 4], (3,))
    assert (ints / 2).dtype == ember.float32 and (ints * 2).dtype == ember.int64
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim dense "
                                           r"tensor divisor \(got shape \[4, 5\] for divisor\)"):
        a / d
    with pytest.raises(NotImplementedError, match="exp"):
        ember.exp(a)
    np.testing.assert_allclose(dense(a * randn(5, device=device, seed=9)),  # broadcast, as PyTorch
                               dense(a) * dense(randn(5, device=device, seed=9)), atol=1e-12)
    with pytest.raises(RuntimeError, match="mul"):
        a * randn(4, device=device)


def test_transpose_narrow_index_select(device):
    s = rand_sparse((4, 5, 2), 9, device, dense_dims=1, dup=True)
    sd = dense(s)
    np.testing.assert_allclose(dense(s.transpose(0, 1)), sd.transpose(1, 0, 2))
    np.testing.assert_allclose(dense(s.transpose(1, 0)), sd.transpose(1, 0, 2))
    assert not s.transpose(0, 1).is_coalesced()
    np.testing.assert_allclose(dense(s.transpose(2, 2)), sd)
    with pytest.raises(RuntimeError, match="sparse transpose: transposed dimensions must be sparse "
                                           "Got sparse_dim: 2, d0: 0, d1: 2"):
        s.transpose(0, 2)
    m = rand_sparse((4, 5), 7, device)
    np.testing.assert_allclose(dense(m.t()), dense(m).T)
    np.testing.assert_allclose(dense(ember.t(m)), dense(m).T)
    np.testing.assert_allclose(dense(s.narrow_copy(1, 1, 3)), sd[:, 1:4])
    np.testing.assert_allclose(dense(s.narrow_copy(2, 1, 1)), sd[:, :, 1:2])
    np.testing.assert_allclose(dense(ember.narrow_copy(s, 0, -2, 2)), sd[2:4])
    idx = ember.tensor([3, 0, 3], device=device)
    np.testing.assert_allclose(dense(s.index_select(0, idx)), sd[[3, 0, 3]])
    np.testing.assert_allclose(dense(ember.index_select(s, 1, idx)), sd[:, [3, 0, 3]])
    np.testing.assert_allclose(dense(s.index_select(2, ember.tensor([1], device=device))), sd[:, :, [1]])
    with pytest.raises(IndexError, match=r"index_select\(\): index contains 4 that is out of range "
                                         r"for tensor of size \[4, 5, 2\] at dimension 0"):
        s.index_select(0, ember.tensor([4], device=device))


def test_sparse_mask(device):
    d = randn(4, 5, device=device)
    m = rand_sparse((4, 5), 7, device, seed=5)
    r = d.sparse_mask(m)
    assert r.is_sparse and r.is_coalesced()
    np.testing.assert_array_equal(r._indices().cpu().numpy(), m._indices().cpu().numpy())
    np.testing.assert_allclose(dense(r), np.where(dense(m) != 0, dense(d), 0))
    s = rand_sparse((4, 5), 9, device, seed=6)
    np.testing.assert_allclose(dense(s.sparse_mask(m)), np.where(dense(m) != 0, dense(s), 0))
    with pytest.raises(RuntimeError, match="sparse_mask\\(\\): operands have incompatible sizes"):
        d.sparse_mask(rand_sparse((5, 4), 3, device))


def test_sum(device):
    s = rand_sparse((3, 4, 2), 7, device, dense_dims=1, dup=True)
    sd = dense(s)
    assert not s.sum().is_sparse
    np.testing.assert_allclose(dense(s.sum()), sd.sum())
    np.testing.assert_allclose(dense(ember.sparse.sum(s)), sd.sum())
    r = ember.sparse.sum(s, 1)
    assert r.is_sparse and r.shape == (3, 2)
    np.testing.assert_allclose(dense(r), sd.sum(1))
    np.testing.assert_allclose(dense(ember.sparse.sum(s, (0, 1))), sd.sum((0, 1)))
    np.testing.assert_allclose(dense(s.sum(dim=2)), sd.sum(2))
    k = s.sum(0, keepdim=True)  # a reduced sparse dim stays, size 1, as PyTorch
    assert k.is_sparse and k.shape == (1, 4, 2)
    np.testing.assert_allclose(dense(k), sd.sum(0, keepdims=True))
    kd = s.sum((0, 1), keepdim=True)
    assert not kd.is_sparse and kd.shape == (1, 1, 2)
    np.testing.assert_allclose(dense(kd), sd.sum((0, 1), keepdims=True))
    np.testing.assert_allclose(dense(s.sum(2, keepdim=True)), sd.sum(2, keepdims=True))


@pytest.mark.parametrize("log", [False, True])
def test_softmax(log, device):
    s = rand_sparse((4, 6), 11, device)
    sd = dense(s)
    f = ember.sparse.log_softmax if log else ember.sparse.softmax
    for dim in (0, 1, -1):
        r = f(s, dim)
        assert r.is_sparse
        mask = sd != 0
        z = np.where(mask, sd, -np.inf)
        e = np.where(mask, np.exp(z - z.max(axis=dim, keepdims=True)), 0)
        p = e / np.maximum(e.sum(axis=dim, keepdims=True), 1e-300)
        exp = np.where(mask, np.log(np.where(mask, p, 1)), 0) if log else p
        np.testing.assert_allclose(dense(r), exp, atol=1e-12)
    h = rand_sparse((3, 4, 5), 6, device, dense_dims=1)
    np.testing.assert_allclose(dense(ember.sparse.softmax(h, 2)),
                               np.where(dense(h).any(2, keepdims=True),
                                        np.exp(dense(h)) / np.exp(dense(h)).sum(2, keepdims=True), 0),
                               atol=1e-12)


# ---- autograd ----------------------------------------------------------------------------

def test_sparse_mm_gradients(device):
    s = rand_sparse((5, 4), 8, device, requires_grad=True)
    d = randn(4, 3, device=device, requires_grad=True)
    y = ember.sparse.mm(s, d)
    assert y.grad_fn.name() == "SparseAddmmBackward0"
    g = randn(5, 3, device=device, seed=7)
    y.backward(g)
    assert s.grad.is_sparse and d.grad is not None and not d.grad.is_sparse
    full = dense(g) @ dense(d).T
    np.testing.assert_allclose(dense(s.grad), np.where(dense(s) != 0, full, 0), atol=1e-12)
    np.testing.assert_array_equal(s.grad.coalesce()._indices().cpu().numpy(),
                                  s._indices().cpu().numpy())
    np.testing.assert_allclose(dense(d.grad), dense(s).T @ dense(g), atol=1e-12)


def test_mm_gives_strided_gradient(device):
    s = rand_sparse((5, 4), 8, device, requires_grad=True)
    d = randn(4, 3, device=device, requires_grad=True)
    y = ember.mm(s, d)
    assert y.grad_fn.name() == "MmBackward0"
    y.sum().backward()
    assert not s.grad.is_sparse  # PyTorch's mm: the sparse input's gradient is strided
    np.testing.assert_allclose(dense(s.grad), np.ones((5, 3)) @ dense(d).T, atol=1e-12)


def test_gradcheck_sparse_inputs(device):
    s = rand_sparse((4, 5), 7, device, requires_grad=True)
    d = randn(5, 3, device=device, requires_grad=True)
    assert gradcheck(ember.sparse.mm, (s, d))
    assert gradgradcheck(ember.sparse.mm, (s, d))
    assert gradcheck(ember.mm, (s, d), masked=True)
    assert not gradcheck(ember.mm, (s, d), masked=False, raise_exception=False)
    m = randn(4, 3, device=device, requires_grad=True)
    assert gradcheck(lambda m, s, d: ember.sparse.addmm(m, s, d, beta=0.3, alpha=1.5), (m, s, d))
    u = rand_sparse((4, 5), 6, device, dup=True, requires_grad=True)
    for fn in (lambda x: x.to_dense(), lambda x: x.coalesce().values(), lambda x: (x * 3).to_dense(),
               lambda x: x.t().to_dense(), lambda x: ember.sparse.sum(x, 1),
               lambda x: ember.sparse.softmax(x, 1), lambda x: ember.sparse.log_softmax(x, 0),
               lambda x: x.narrow_copy(1, 1, 3).to_dense(),
               lambda x: x.index_select(0, ember.tensor([2, 0, 2], device=device)).to_dense(),
               lambda x: (x + x).to_dense(), lambda x: (x * x).to_dense(),
               lambda x: x.sum(), lambda x: ember.sparse.mm(x, x.t().to_dense())):
        for x in (s, u):
            assert gradcheck(fn, (x,)), fn
    dd = randn(4, 5, device=device, requires_grad=True)
    assert gradcheck(lambda x, y: (x * y).to_dense(), (s, dd))
    assert gradcheck(lambda x, y: x.sparse_mask(y), (dd, s.detach()))
    assert gradcheck(lambda y, x: y + x, (dd, s), masked=True)  # AddBackward0: strided grad
    v = randn(7, device=device, requires_grad=True)
    i = s._indices()
    assert gradcheck(lambda v: ember.sparse_coo_tensor(i, v, (4, 5)), (v,))


def test_leaf_values_gradient(device):
    i = ember.tensor([[0, 1, 1], [2, 0, 2]], device=device)
    v = ember.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    s = ember.sparse_coo_tensor(i, v, (2, 3))
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0"
    w = ember.tensor([[1.0], [2.0], [3.0]], device=device)
    (ember.sparse.mm(s, w) ** 2).sum().backward()
    out = dense(s) @ dense(w)
    g = 2 * out @ dense(w).T
    np.testing.assert_allclose(dense(v.grad), [g[0, 2], g[1, 0], g[1, 2]])


def test_gradient_accumulation_sparse(device):
    w = randn(6, 3, device=device, requires_grad=True)
    idx = ember.tensor([1, 4, 1], device=device)
    emb = ember.nn.functional.embedding
    emb(idx, w, sparse=True).sum().backward()
    g1 = w.grad
    assert g1.is_sparse
    emb(idx, w, sparse=True).pow(2).sum().backward()  # sparse + sparse, in place
    assert w.grad.is_sparse
    expect = np.zeros((6, 3))
    for k in (1, 4, 1):
        expect[k] += 1 + 2 * dense(w)[k]
    np.testing.assert_allclose(dense(w.grad), expect)
    (w * 1.0).sum().backward()  # a strided gradient makes the accumulated gradient strided
    assert not w.grad.is_sparse
    np.testing.assert_allclose(dense(w.grad), expect + 1)


# ---- nn.Embedding(sparse=True) and the optimizers -----------------------------------------

def _embedding_grads(sparse, device, padding_idx=None, scale=False):
    ember.manual_seed(0)
    emb = ember.nn.Embedding(10, 4, sparse=sparse, padding_idx=padding_idx,
                             scale_grad_by_freq=scale).to(device)
    x = ember.tensor([[1, 2, 4, 5], [4, 3, 2, 9]], device=device)
    (emb(x) ** 2).sum().backward()
    return emb.weight.grad


@pytest.mark.parametrize("padding_idx,scale", [(None, False), (2, False), (None, True)])
def test_embedding_sparse_grad(padding_idx, scale, device):
    g = _embedding_grads(True, device, padding_idx, scale)
    assert g.is_sparse and not g.is_coalesced() and g.shape == (10, 4)
    assert g._nnz() == (8 if padding_idx is None else 6)
    np.testing.assert_allclose(dense(g), dense(_embedding_grads(False, device, padding_idx, scale)),
                               rtol=1e-6)
    assert "sparse=True" in repr(ember.nn.Embedding(3, 2, sparse=True))


def test_embedding_bag_sparse(device):
    ember.manual_seed(0)
    bag = ember.nn.EmbeddingBag(10, 3, mode="mean", sparse=True).to(device)
    x = ember.tensor([1, 2, 4, 5, 4, 3, 2, 9], device=device)
    off = ember.tensor([0, 4], device=device)
    bag(x, off).pow(2).sum().backward()
    g = bag.weight.grad
    assert g.is_sparse
    ref = ember.nn.EmbeddingBag(10, 3, mode="mean").to(device)
    with ember.no_grad():
        ref.weight.copy_(bag.weight)
    ref(x, off).pow(2).sum().backward()
    np.testing.assert_allclose(dense(g), dense(ref.weight.grad), rtol=1e-6)


def _steps(opt_cls, sparse, device, **kw):
    ember.manual_seed(3)
    emb = ember.nn.Embedding(12, 5, sparse=sparse).to(device)
    opt = opt_cls(emb.parameters(), **kw)
    for it in range(4):
        x = ember.tensor([[1, 3, 3, 7], [it, 2, 11, 1]], device=device)
        opt.zero_grad()
        (emb(x).tanh() ** 2).sum().backward()
        opt.step()
    return dense(emb.weight)


@pytest.mark.parametrize("opt,kw", [
    (ember.optim.SGD, {"lr": 0.1}),
    (ember.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
    (ember.optim.Adagrad, {"lr": 0.1}),
    (ember.optim.Adagrad, {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
])
def test_optimizers_step_with_sparse_grads(opt, kw, device):
    # Rows a step touches update as with the dense gradient; untouched rows stay.
    np.testing.assert_allclose(_steps(opt, True, device, **kw), _steps(opt, False, device, **kw),
                               rtol=1e-5, atol=1e-6)


def test_sparse_adam_matches_reference(device):
    got = _steps(ember.optim.SparseAdam, True, device, lr=0.05)
    # PyTorch's lazy Adam in NumPy: moments and parameters change at the gradient's rows.
    ember.manual_seed(3)
    emb = ember.nn.Embedding(12, 5, sparse=True).to(device)
    w = dense(emb.weight).astype(np.float32)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for it in range(4):
        x = np.array([[1, 3, 3, 7], [it, 2, 11, 1]]).reshape(-1)
        g = np.zeros_like(w)
        t = np.tanh(w[x])
        np.add.at(g, x, 2 * t * (1 - t * t))
        rows = np.unique(x)
        step = it + 1
        m[rows] += (g[rows] - m[rows]) * (1 - 0.9)
        v[rows] += (g[rows] ** 2 - v[rows]) * (1 - 0.999)
        size = 0.05 * np.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
        w[rows] += -size * m[rows] / (np.sqrt(v[rows]) + 1e-8)
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_optimizer_sparse_errors(device):
    emb = ember.nn.Embedding(5, 2, sparse=True).to(device)
    emb(ember.tensor([1, 2], device=device)).sum().backward()
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please "
                                           "consider SparseAdam instead"):
        ember.optim.Adam(emb.parameters()).step()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse"):
        ember.optim.Adagrad(emb.parameters(), weight_decay=0.1).step()
    dense_emb = ember.nn.Embedding(5, 2).to(device)
    dense_emb(ember.tensor([1], device=device)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ember.optim.SparseAdam(dense_emb.parameters()).step()
