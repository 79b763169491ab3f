"""Embedding / EmbeddingBag and the helpers one_hot, normalize, cosine_similarity,
pairwise_distance, pdist, cdist: NumPy references, gradients (padding_idx,
scale_grad_by_freq), max_norm renormalization, init and errors."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


def idx(a, device="cpu"):
    return ember.tensor(np.asarray(a, dtype=np.int64), device=device)


def test_embedding_forward_and_grad(device):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 3))
    ix = np.array([[0, 2, 2], [5, 1, 2]])
    wt = t(w, device=device, rg=True)
    out = F.embedding(idx(ix, device), wt)
    np.testing.assert_allclose(out.detach().cpu().numpy(), w[ix])
    g = rng.normal(size=(2, 3, 3))
    out.backward(t(g, device=device))
    exp = np.zeros_like(w)
    np.add.at(exp, ix.reshape(-1), g.reshape(-1, 3))
    np.testing.assert_allclose(wt.grad.cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda v: F.embedding(idx(ix, device), v), (wt,))
    assert gradgradcheck(lambda v: F.embedding(idx(ix, device), v), (wt,))


def test_padding_idx_and_scale_grad_by_freq(device):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(5, 2))
    ix = np.array([1, 2, 2, 2, 4, 1])
    g = rng.normal(size=(6, 2))
    wt = t(w, device=device, rg=True)
    F.embedding(idx(ix, device), wt, padding_idx=2, scale_grad_by_freq=True).backward(
        t(g, device=device))
    counts = np.bincount(ix, minlength=5)
    exp = np.zeros_like(w)
    for k, i in enumerate(ix):
        if i != 2:
            exp[i] += g[k] / counts[i]
    np.testing.assert_allclose(wt.grad.cpu().numpy(), exp, atol=1e-12)
    wt2 = t(w, device=device, rg=True)
    F.embedding(idx(ix, device), wt2, padding_idx=-3).sum().backward()  # -3 -> row 2
    assert (wt2.grad.cpu().numpy()[2] == 0).all()


def test_max_norm(device):
    w = t(np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]), device=device)
    out = F.embedding(idx([0, 1, 0], device), w, max_norm=1.0)
    np.testing.assert_allclose(w.cpu().numpy()[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(w.cpu().numpy()[1], [0.3, 0.4])
    np.testing.assert_allclose(w.cpu().numpy()[2], [6.0, 8.0])  # unused row untouched
    np.testing.assert_allclose(out.cpu().numpy()[0], [0.6, 0.8], rtol=1e-6)


def test_embedding_errors(device):
    w = t(np.zeros((4, 2)), device=device)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(idx([0, 4], device), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(idx([-1], device), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(t([0.0, 1.0], device=device), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(4, 2, padding_idx=4)


def test_embedding_module():
    ember.manual_seed(0)
    m = nn.Embedding(2000, 50, padding_idx=3)
    w = m.weight.detach().numpy()
    assert (w[3] == 0).all()
    rest = np.delete(w, 3, 0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1) < 0.02
    out = m(ember.tensor([[1, 3]]))
    assert tuple(out.shape) == (1, 2, 50)
    pre = ember.tensor(np.arange(6.0).reshape(3, 2))
    e = nn.Embedding.from_pretrained(pre)
    assert not e.weight.requires_grad
    assert e(ember.tensor([2])).tolist() == [[4.0, 5.0]]
    assert nn.Embedding.from_pretrained(pre, freeze=False).weight.requires_grad


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode, device):
    rng = np.random.default_rng(2)
    w = rng.normal(size=(10, 3))
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = np.array([0, 4, 4])  # second bag empty
    bags = [inp[0:4], inp[4:4], inp[4:]]
    red = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    exp = np.stack([red(w[b], 0) if len(b) else np.zeros(3) for b in bags])
    wt = t(w, device=device, rg=True)
    out = F.embedding_bag(idx(inp, device), wt, idx(offsets, device), mode=mode)
    np.testing.assert_allclose(out.detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda v: F.embedding_bag(idx(inp, device), v, idx(offsets, device),
                                               mode=mode), (wt,))
    # 2-D input: fixed-length bags
    two = np.array([[1, 2], [4, 4]])
    out2 = F.embedding_bag(idx(two, device), wt, mode=mode)
    np.testing.assert_allclose(out2.detach().cpu().numpy(), red(w[two], 1), atol=1e-12)
    # include_last_offset
    out3 = F.embedding_bag(idx(inp, device), wt, idx([0, 4, 4, 8], device), mode=mode,
                           include_last_offset=True)
    np.testing.assert_allclose(out3.detach().cpu().numpy(), exp, atol=1e-12)


def test_embedding_bag_weights_padding_module(device):
    rng = np.random.default_rng(3)
    w = rng.normal(size=(6, 2))
    inp = np.array([0, 1, 2, 3, 1])
    psw = rng.uniform(size=5)
    wt = t(w, device=device, rg=True)
    pt = t(psw, device=device, rg=True)
    out = F.embedding_bag(idx(inp, device), wt, idx([0, 2], device), mode="sum",
                          per_sample_weights=pt)
    exp = np.stack([(w[inp[:2]] * psw[:2, None]).sum(0), (w[inp[2:]] * psw[2:, None]).sum(0)])
    np.testing.assert_allclose(out.detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda a, b: F.embedding_bag(idx(inp, device), a, idx([0, 2], device),
                                                  mode="sum", per_sample_weights=b), (wt, pt))
    out = F.embedding_bag(idx(inp, device), wt, idx([0, 2], device), mode="mean", padding_idx=1)
    exp = np.stack([w[0], (w[2] + w[3]) / 2])
    np.testing.assert_allclose(out.detach().cpu().numpy(), exp, atol=1e-12)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for "
                                                  "mode='sum'"):
        F.embedding_bag(idx(inp, device), wt, idx([0, 2], device), mode="mean",
                        per_sample_weights=pt)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(idx(inp, device), wt, idx([1, 2], device))
    m = nn.EmbeddingBag(6, 2, mode="sum")
    assert tuple(m(idx(inp), idx([0, 2])).shape) == (2, 2)


def test_one_hot(device):
    r = F.one_hot(idx([0, 2, 1], device))
    assert r.dtype == ember.int64
    np.testing.assert_array_equal(r.cpu().numpy(), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    assert tuple(F.one_hot(idx([[1], [0]], device), 4).shape) == (2, 1, 4)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(idx([3], device), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(idx([-1], device))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(t([1.0], device=device))
    assert tuple(F.one_hot(idx(np.zeros(0), device), 5).shape) == (0, 5)


def test_normalize_cosine_pairwise(device):
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    at, bt = t(a, device=device, rg=True), t(b, device=device, rg=True)
    np.testing.assert_allclose(F.normalize(at).detach().cpu().numpy(),
                               a / np.linalg.norm(a, axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(F.normalize(at, p=1, dim=0).detach().cpu().numpy(),
                               a / np.abs(a).sum(0, keepdims=True), atol=1e-12)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(at, bt).detach().cpu().numpy(), cos,
                               atol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(at, bt).detach().cpu().numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=1), atol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(at, bt, p=1, keepdim=True).detach().cpu().numpy(),
                               np.abs(a - b + 1e-6).sum(1, keepdims=True), atol=1e-12)
    assert gradcheck(F.cosine_similarity, (at, bt))
    assert gradcheck(F.pairwise_distance, (at, bt))
    assert gradcheck(lambda v: F.normalize(v), (at,))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
def test_pdist_cdist(p, device):
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))

    def dist(u, v):
        d = np.abs(u - v)
        return d.max(-1) if p == float("inf") else (d**p).sum(-1) ** (1 / p)
    exp = np.array([dist(a[i], a[j]) for i in range(5) for j in range(i + 1, 5)])
    at, bt = t(a, device=device, rg=True), t(b, device=device, rg=True)
    np.testing.assert_allclose(ember.pdist(at, p).detach().cpu().numpy(), exp, atol=1e-12)
    np.testing.assert_allclose(F.pdist(at, p).detach().cpu().numpy(), exp, atol=1e-12)
    exp = dist(a[:, None, :], b[None, :, :])
    np.testing.assert_allclose(ember.cdist(at, bt, p).detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda u: ember.pdist(u, p), (at,))
    assert gradcheck(lambda u, v: ember.cdist(u, v, p), (at, bt))


def test_cdist_mm_path_and_batch(device):
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(2, 30, 4)), rng.normal(size=(2, 27, 4))
    exp = np.linalg.norm(a[:, :, None] - b[:, None], axis=-1)
    at, bt = t(a, device=device, rg=True), t(b, device=device, rg=True)
    for mode in ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                 "donot_use_mm_for_euclid_dist"]:
        np.testing.assert_allclose(ember.cdist(at, bt, compute_mode=mode).detach().cpu().numpy(),
                                   exp, atol=1e-10)
    assert gradcheck(lambda u, v: ember.cdist(u, v, compute_mode="use_mm_for_euclid_dist"),
                     (t(a[:, :3], device=device, rg=True), t(b[:, :4], device=device, rg=True)))
    same = t(a[0], device=device, rg=True)
    d = ember.cdist(same, same, compute_mode="use_mm_for_euclid_dist")
    d.sum().backward()
    assert np.isfinite(same.grad.cpu().numpy()).all()
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        ember.cdist(at, t(np.zeros((2, 3, 5)), device=device))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        ember.pdist(at)
