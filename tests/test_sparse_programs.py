"""A program written the way PyTorch users write it: a two-layer GCN on a sparse normalized
adjacency (torch.sparse_coo_tensor, torch.sparse.sum, torch.sparse.mm), trained a few epochs
on a small synthetic graph. It runs, unmodified, on ember (``torch`` aliased to ember in a
subprocess) and, where an interpreter has PyTorch (torch_python), under PyTorch; both losses
must fall."""
import json
import os
import subprocess
import sys

import pytest
from child_env import EMBER_PARENT
from torch_python import TORCH_PY

GCN_PROGRAM = r'''
import json
import torch
import torch.nn as nn
import torch.nn.functional as F


def normalized_adjacency(edge_index, n):
    """D^-1/2 (A + I) D^-1/2 of an undirected graph, as a sparse COO tensor."""
    loops = torch.arange(n).repeat(2, 1)
    index = torch.cat([edge_index, edge_index.flip(0), loops], dim=1)
    adj = torch.sparse_coo_tensor(index, torch.ones(index.shape[1]), (n, n)).coalesce()
    deg = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = deg.pow(-0.5)
    i = adj.indices()
    v = d_inv_sqrt[i[0]] * adj.values() * d_inv_sqrt[i[1]]
    return torch.sparse_coo_tensor(i, v, (n, n)).coalesce()


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, adj):
        return torch.sparse.mm(adj, self.linear(x))


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout=0.5):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


torch.manual_seed(0)
n, nclass, nfeat = 240, 3, 16
labels = torch.arange(n) % nclass
# a stochastic block model: dense within a class, sparse across
same = labels.unsqueeze(0) == labels.unsqueeze(1)
prob = torch.where(same, torch.tensor(0.06), torch.tensor(0.004))
upper = torch.triu(torch.rand(n, n) < prob, diagonal=1)
edge_index = upper.nonzero().t()
adj = normalized_adjacency(edge_index, n)
means = torch.randn(nclass, nfeat)
features = means[labels] + 1.5 * torch.randn(n, nfeat)
train = torch.rand(n) < 0.4

model = GCN(nfeat, 16, nclass)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)
losses = []
for epoch in range(40):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss = F.nll_loss(output[train], labels[train])
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    pred = model(features, adj).argmax(dim=1)
acc = (pred[~train] == labels[~train]).float().mean().item()
print(json.dumps({"losses": losses, "acc": acc, "nnz": adj._nnz(), "edges": edge_index.shape[1]}))
'''

# `import torch[.x]` resolves to ember[.x] (the program's own source is unchanged).
EMBER_PRELUDE = r'''
import importlib, sys
import ember
sys.modules["torch"] = ember
for sub in ("nn", "nn.functional", "optim", "sparse", "autograd"):
    sys.modules["torch." + sub] = importlib.import_module("ember." + sub)
'''


# Embedding(sparse=True) trained with each optimizer that takes sparse gradients, from the
# same initial weights and data: the final weights must match PyTorch's to float32 rounding.
EMBEDDING_PROGRAM = r'''
import json
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
init = rng.standard_normal((50, 8)).astype(np.float32)
batches = [torch.from_numpy(rng.integers(0, 50, size=(4, 6))) for _ in range(5)]
targets = [torch.from_numpy(rng.standard_normal((4, 8)).astype(np.float32)) for _ in range(5)]
out = {}
for name, make in [("SGD", lambda p: torch.optim.SGD(p, lr=0.5)),
                   ("SGD momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
                   ("Adagrad", lambda p: torch.optim.Adagrad(p, lr=0.3, lr_decay=0.01)),
                   ("SparseAdam", lambda p: torch.optim.SparseAdam(p, lr=0.05))]:
    emb = nn.Embedding(50, 8, sparse=True)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(init))
    bag = nn.EmbeddingBag(50, 8, mode="mean", sparse=True)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(init[::-1].copy()))
    opt = make(list(emb.parameters()) + list(bag.parameters()))
    for x, y in zip(batches, targets):
        opt.zero_grad()
        loss = ((emb(x).mean(1) - y) ** 2).sum() + ((bag(x) - y).abs()).sum()
        loss.backward()
        assert emb.weight.grad.is_sparse and bag.weight.grad.is_sparse
        opt.step()
    out[name] = [emb.weight.detach().numpy().tolist(), bag.weight.detach().numpy().tolist()]
print(json.dumps(out))
'''


def _run(python, source, env_extra):
    env = dict(os.environ, **env_extra)
    r = subprocess.run([python, "-c", source], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _check_trend(res, who):
    losses = res["losses"]
    assert all(v == v for v in losses), f"{who}: NaN loss {losses}"
    assert losses[-1] < 0.5 * losses[0], f"{who}: the loss did not fall: {losses}"
    assert min(losses[-5:]) < min(losses[:5]), f"{who}: {losses}"
    assert res["acc"] > 0.6, f"{who}: test accuracy {res['acc']}"


def test_gcn_on_sparse_adjacency_trains_on_ember():
    res = _run(sys.executable, EMBER_PRELUDE + GCN_PROGRAM,
               {"PYTHONPATH": EMBER_PARENT})
    assert res["nnz"] == 2 * res["edges"] + 240
    _check_trend(res, "ember")


@pytest.mark.skipif(TORCH_PY is None, reason="no PyTorch interpreter")
def test_gcn_loss_trend_matches_pytorch():
    ours = _run(sys.executable, EMBER_PRELUDE + GCN_PROGRAM,
                {"PYTHONPATH": EMBER_PARENT})
    try:
        theirs = _run(TORCH_PY, GCN_PROGRAM, {"PYTHONPATH": ""})
    except AssertionError as e:
        if "No module named 'torch'" in str(e):
            pytest.skip("the PyTorch venv has no torch")
        raise
    _check_trend(theirs, "PyTorch")
    _check_trend(ours, "ember")
    # Different generators make different graphs; the trends must agree: the loss halves
    # within a few epochs of when PyTorch's does, and accuracy is within 0.2.
    def halved_at(r):
        return next(i for i, v in enumerate(r["losses"]) if v < 0.5 * r["losses"][0])
    assert abs(halved_at(ours) - halved_at(theirs)) <= 6, (ours["losses"], theirs["losses"])
    assert abs(ours["acc"] - theirs["acc"]) < 0.2, (ours["acc"], theirs["acc"])


@pytest.mark.skipif(TORCH_PY is None, reason="no PyTorch interpreter")
def test_sparse_embedding_optimizers_match_pytorch():
    import numpy as np
    ours = _run(sys.executable, EMBER_PRELUDE + EMBEDDING_PROGRAM,
                {"PYTHONPATH": EMBER_PARENT})
    theirs = _run(TORCH_PY, EMBEDDING_PROGRAM, {"PYTHONPATH": ""})
    for name in theirs:
        for a, b in zip(ours[name], theirs[name]):
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=2e-5, atol=2e-6,
                                       err_msg=name)
