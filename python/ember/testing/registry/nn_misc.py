"""Registry entries of linear / bilinear, embedding, one_hot and the distances."""
import numpy as np

import ember
import ember.nn.functional as F

from . import ErrorCase, OpEntry, Sample


def _t(a, dtype, device):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


def _x(shape, dtype, device, seed=0):
    return _t(np.random.default_rng(seed).normal(size=shape), dtype, device)


def _linear_errors(device):
    yield ErrorCase((ember.zeros(64, 783, device=device), ember.zeros(10, 784, device=device)),
                    {}, RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(64x783 and "
                                      r"784x10\)")


def _emb_errors(device):
    yield ErrorCase((ember.tensor([0, 4], device=device), ember.zeros(4, 2, device=device)), {},
                    IndexError, "index out of range in self")


def _dist(a, b, p):
    d = np.abs(a - b)
    return d.max(-1) if p == float("inf") else (d**p).sum(-1) ** (1 / p)


ENTRIES = [
    OpEntry("nn.functional.linear", F.linear,
            lambda device, dtype: [Sample((_x((2, 3, 5), dtype, device), _x((4, 5), dtype, device, 1),
                                           _x((4,), dtype, device, 2))),
                                   Sample((_x((3, 5), dtype, device), _x((4, 5), dtype, device, 1)))],
            ref=lambda x, w, b=None: x @ w.T + (0 if b is None else b), errors=_linear_errors),
    OpEntry("nn.functional.bilinear", F.bilinear,
            lambda device, dtype: [Sample((_x((3, 4), dtype, device), _x((3, 2), dtype, device, 1),
                                           _x((5, 4, 2), dtype, device, 2),
                                           _x((5,), dtype, device, 3)))],
            ref=lambda a, b, w, c: np.einsum("ni,oij,nj->no", a, w, b) + c),
    OpEntry("nn.functional.embedding", F.embedding,
            lambda device, dtype: [Sample((ember.tensor([[0, 2], [3, 2]], device=device),
                                           _x((4, 3), dtype, device)))],
            ref=lambda i, w: w[i], errors=_emb_errors),
    OpEntry("nn.functional.embedding_bag", F.embedding_bag,
            lambda device, dtype: [Sample((ember.tensor([0, 2, 3, 1], device=device),
                                           _x((4, 3), dtype, device),
                                           ember.tensor([0, 1], device=device)))],
            ref=lambda i, w, o: np.stack([w[i[:1]].mean(0), w[i[1:]].mean(0)])),
    OpEntry("nn.functional.one_hot", F.one_hot,
            lambda device, dtype: [Sample((ember.tensor([0, 2, 1], device=device), 4))],
            ref=lambda t, n: np.eye(n, dtype=np.int64)[t], dtypes=("int64",), grad=False),
    OpEntry("pdist", ember.pdist,
            lambda device, dtype: [Sample((_x((4, 3), dtype, device), 2.0)),
                                   Sample((_x((4, 3), dtype, device), 1.0))],
            ref=lambda x, p: np.array([_dist(x[i], x[j], p) for i in range(len(x))
                                       for j in range(i + 1, len(x))]),
            aliases=("nn.functional.pdist",)),
    OpEntry("cdist", ember.cdist,
            lambda device, dtype: [Sample((_x((2, 4, 3), dtype, device), _x((2, 5, 3), dtype, device, 1)),
                                          {"p": 2.0}),
                                   Sample((_x((4, 3), dtype, device), _x((30, 3), dtype, device, 1)),
                                          {"p": 2.0}, desc="matmul path")],
            ref=lambda a, b, p: _dist(a[..., :, None, :], b[..., None, :, :], p),
            aliases=("nn.functional.cdist",), atol=1e-9),
    OpEntry("nn.functional.normalize", F.normalize,
            lambda device, dtype: [Sample((_x((3, 4), dtype, device),))],
            ref=lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)),
    OpEntry("nn.functional.cosine_similarity", F.cosine_similarity,
            lambda device, dtype: [Sample((_x((3, 4), dtype, device), _x((3, 4), dtype, device, 1)))],
            ref=lambda a, b: (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)),
    OpEntry("nn.functional.pairwise_distance", F.pairwise_distance,
            lambda device, dtype: [Sample((_x((3, 4), dtype, device), _x((3, 4), dtype, device, 1)))],
            ref=lambda a, b: np.linalg.norm(a - b + 1e-6, axis=-1)),
]
