"""ember.utils.data against PyTorch's own answers (PyTorch runs in a subprocess; skipped
when it is not installed)."""
import json
import os
import subprocess

import pytest
from torch_python import TORCH_PY

import ember
from ember.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    SequentialSampler,
    default_collate,
    random_split,
)

SCRIPT = r"""
import json, collections, math
import torch
from torch.utils.data import DistributedSampler, BatchSampler, SequentialSampler, DataLoader, default_collate
out = {}
out["dist"] = {f"{n},{r},{d}": [list(DistributedSampler(range(n), r, k, shuffle=False, drop_last=d)) for k in range(r)]
               for n in (1, 5, 10, 13) for r in (1, 3, 4) for d in (False, True)}
out["batch"] = [list(BatchSampler(SequentialSampler(range(n)), b, d)) for n in (0, 5, 7) for b in (1, 3) for d in (False, True)]
def describe(x):
    if isinstance(x, torch.Tensor):
        return ["T", str(x.dtype).split(".")[-1], list(x.shape), x.tolist()]
    if isinstance(x, dict):
        return ["D", {k: describe(v) for k, v in x.items()}]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ["NT", [describe(v) for v in x]]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [describe(v) for v in x]]
    return ["V", x]
P = collections.namedtuple("P", "a b")
samples = [
    [{"x": 1, "y": [1.5, "s"], "z": (True, 2)}, {"x": 2, "y": [2.5, "t"], "z": (False, 3)}],
    [P(1, 2.0), P(3, 4.0)],
    [[1, 2, 3], [4, 5, 6]],
    [(torch.ones(2), 1), (torch.zeros(2), 0)],
]
out["collate"] = [describe(default_collate(s)) for s in samples]
out["len"] = [len(DataLoader(range(n), batch_size=b, drop_last=d)) for n in (0, 5, 64) for b in (1, 4, 64) for d in (False, True)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def torch_answers():
    if TORCH_PY is None:
        pytest.skip("no PyTorch interpreter")
    r = subprocess.run([TORCH_PY, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=""))
    if r.returncode != 0:
        pytest.skip(f"PyTorch is not usable here: {r.stderr[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def describe(x):
    if isinstance(x, ember.Tensor):
        return ["T", str(x.dtype).split(".")[-1], list(x.shape), x.tolist()]
    if isinstance(x, dict):
        return ["D", {k: describe(v) for k, v in x.items()}]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ["NT", [describe(v) for v in x]]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [describe(v) for v in x]]
    return ["V", x]


def test_distributed_sampler_matches_torch(torch_answers):
    for key, shards in torch_answers["dist"].items():
        n, r, d = key.split(",")
        n, r, d = int(n), int(r), d == "True"
        ours = [list(DistributedSampler(range(n), r, k, shuffle=False, drop_last=d)) for k in range(r)]
        assert ours == shards, key


def test_batch_sampler_and_len_match_torch(torch_answers):
    ours = [list(BatchSampler(SequentialSampler(range(n)), b, d)) for n in (0, 5, 7) for b in (1, 3) for d in (False, True)]
    assert ours == torch_answers["batch"]
    lens = [len(DataLoader(range(n), batch_size=b, drop_last=d)) for n in (0, 5, 64) for b in (1, 4, 64) for d in (False, True)]
    assert lens == torch_answers["len"]


def test_default_collate_matches_torch(torch_answers):
    import collections
    P = collections.namedtuple("P", "a b")
    samples = [
        [{"x": 1, "y": [1.5, "s"], "z": (True, 2)}, {"x": 2, "y": [2.5, "t"], "z": (False, 3)}],
        [P(1, 2.0), P(3, 4.0)],
        [[1, 2, 3], [4, 5, 6]],
        [(ember.ones(2), 1), (ember.zeros(2), 0)],
    ]
    for s, want in zip(samples, torch_answers["collate"]):
        assert json.loads(json.dumps(describe(default_collate(s)))) == want


def test_random_split_partitions():
    parts = random_split(range(7), [0.3, 0.3, 0.4])
    assert sorted(i for p in parts for i in p) == list(range(7))
