"""ember.utils.data in one process: datasets, samplers, collate and the DataLoader
(including the C++ gather/prefetch path)."""
import collections
import dataclasses
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)
from ember.utils.data.dataloader import _FastIter, _SingleProcessIter


def gen(seed):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


def same(a, b):
    return a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and a.tolist() == b.tolist()


def rows(n, d=3):
    return ember.arange(n * d, dtype=ember.float32).reshape(n, d)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ---- datasets -----------------------------------------------------------------------------------


def test_tensor_dataset_int_and_slice():
    x, y = rows(5), ember.arange(5)
    ds = TensorDataset(x, y)
    assert len(ds) == 5
    a, b = ds[2]
    assert a.tolist() == [6.0, 7.0, 8.0] and b.item() == 2
    a, b = ds[1:3]
    assert a.shape == (2, 3) and b.tolist() == [1, 2]
    a, b = ds[-1]
    assert b.item() == 4
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(rows(5), ember.arange(4))


def test_stack_concat_chain_subset():
    s = StackDataset(Squares(4), ember.arange(4))
    assert s[3][0] == 9 and s[3][1].item() == 3 and len(s) == 4
    d = StackDataset(a=Squares(3), b=Squares(3))
    assert d[2] == {"a": 4, "b": 4}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(Squares(3), Squares(4))
    c = ConcatDataset([Squares(3), Squares(2)])
    assert len(c) == 5 and [c[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert c[-1] == 1 and c.cumulative_sizes == [3, 5]
    assert len(Squares(2) + Squares(3)) == 5
    ch = ChainDataset([Stream(2), Stream(3)])
    assert list(ch) == [0, 1, 0, 1, 2] and len(ch) == 5
    assert list(Stream(1) + Stream(2)) == [0, 0, 1]
    sub = Subset(Squares(10), [9, 1, 4])
    assert [sub[i] for i in range(3)] == [81, 1, 16] and len(sub) == 3


def test_random_split_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=gen(0))
    idx = sorted(list(parts[0]) + list(parts[1]))
    assert idx == list(range(10)) and [len(p) for p in parts] == [3, 7]
    a = [list(p) for p in random_split(range(10), [3, 7], generator=gen(5))]
    b = [list(p) for p in random_split(range(10), [3, 7], generator=gen(5))]
    assert a == b
    parts = random_split(range(11), [0.5, 0.5], generator=gen(1))
    assert [len(p) for p in parts] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])


# ---- samplers -----------------------------------------------------------------------------------


def test_sequential_random_subset_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    perm = list(RandomSampler(range(20), generator=gen(3)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert perm == list(RandomSampler(range(20), generator=gen(3)))
    more = list(RandomSampler(range(5), num_samples=12, generator=gen(1)))
    assert len(more) == 12 and sorted(more[:10]) == sorted(list(range(5)) * 2)
    rep = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=gen(2)))
    assert len(rep) == 50 and set(rep) <= {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=7)) == 7
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    s = list(SubsetRandomSampler([10, 20, 30], generator=gen(0)))
    assert sorted(s) == [10, 20, 30]


def test_weighted_random_sampler():
    w = [0.0, 1.0, 0.0, 3.0]
    draws = list(WeightedRandomSampler(w, 4000, generator=gen(0)))
    counts = np.bincount(draws, minlength=4)
    assert counts[0] == 0 and counts[2] == 0
    assert abs(counts[3] / 4000 - 0.75) < 0.04
    no_rep = list(WeightedRandomSampler([1.0] * 5, 5, replacement=False, generator=gen(1)))
    assert sorted(no_rep) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler(w, 0)
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0]], 2)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(3), 1, "no")


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, True)])
def test_distributed_sampler_partition(n, replicas, drop_last):
    shards = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
              for r in range(replicas)]
    lens = {len(s) for s in shards}
    assert len(lens) == 1
    allidx = [i for s in shards for i in s]
    if drop_last:
        assert len(set(allidx)) == len(allidx) and len(allidx) == (n // replicas) * replicas
    else:
        assert set(allidx) == set(range(n))
        assert len(allidx) == -(-n // replicas) * replicas
    # Interleaved: replica r takes every replicas-th index starting at r (torch's layout).
    if not drop_last and n >= replicas:
        assert shards[0][:2] == [0, replicas]


def test_distributed_sampler_shuffle_epoch():
    s = DistributedSampler(range(20), 2, 0, shuffle=True, seed=7)
    e0 = list(s)
    assert e0 == list(DistributedSampler(range(20), 2, 0, shuffle=True, seed=7))
    s.set_epoch(1)
    assert list(s) != e0
    other = DistributedSampler(range(20), 2, 1, shuffle=True, seed=7)
    assert sorted(e0 + list(other)) == list(range(20))
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), 2, 2)


# ---- collate --------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Sample:
    image: object
    label: int


def test_collate_tensors_numbers_numpy():
    out = default_collate([ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])])
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    ints = default_collate([1, 2, 3])
    assert ints.dtype == ember.int64 and ints.tolist() == [1, 2, 3]
    floats = default_collate([1.5, 2.5])
    assert floats.dtype == ember.float64
    bools = default_collate([True, False])
    assert bools.dtype == ember.bool
    arr = default_collate([np.ones((2,), np.float32), np.zeros((2,), np.float32)])
    assert isinstance(arr, ember.Tensor) and arr.dtype == ember.float32 and arr.shape == (2, 2)
    sc = default_collate([np.float64(1.0), np.float64(2.0)])
    assert sc.dtype == ember.float64 and sc.tolist() == [1.0, 2.0]
    assert default_collate(["a", "b"]) == ["a", "b"]
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])


def test_collate_containers():
    d = default_collate([{"a": 1, "b": ember.tensor([1.0])}, {"a": 2, "b": ember.tensor([2.0])}])
    assert d["a"].tolist() == [1, 2] and d["b"].shape == (2, 1)
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == ember.float64
    s = default_collate([Sample(ember.zeros(2), 1), Sample(ember.ones(2), 0)])
    assert isinstance(s, Sample) and s.image.shape == (2, 2) and s.label.tolist() == [1, 0]
    t = default_collate([(1, "a"), (2, "b")])
    assert isinstance(t, list) and t[0].tolist() == [1, 2] and t[1] == ("a", "b")  # as torch
    lst = default_collate([[1, 2], [3, 4]])
    assert [x.tolist() for x in lst] == [[1, 3], [2, 4]]
    nested = default_collate([{"p": [1, {"q": 2.0}]}, {"p": [3, {"q": 4.0}]}])
    assert nested["p"][0].tolist() == [1, 3] and nested["p"][1]["q"].tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])


def test_collate_ragged_tensor_error():
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": [np.float32(1.0), "s"], "c": Point(np.ones(1), 2)})
    assert isinstance(out["a"], ember.Tensor) and out["a"].tolist() == [0, 1, 2]
    assert isinstance(out["b"][0], ember.Tensor) and out["b"][1] == "s"
    assert isinstance(out["c"], Point) and isinstance(out["c"].x, ember.Tensor) and out["c"].y == 2
    assert default_convert((np.zeros(1),))[0].shape == (1,)


# ---- DataLoader, single process ----------------------------------------------------------------------


def test_loader_batches_and_len():
    x, y = rows(10), ember.arange(10)
    dl = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert isinstance(batches[0], list) and batches[0][0].shape == (4, 3) and batches[2][1].tolist() == [8, 9]
    assert len(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True))) == 2


def test_fast_path_matches_python_path():
    x, y = ember.randn(37, 2, 3), ember.arange(37)
    ds = TensorDataset(x, y)
    dl = DataLoader(ds, batch_size=5, shuffle=True, generator=gen(11))
    it = iter(dl)
    assert isinstance(it, _FastIter)
    fast = list(it)
    # The same indices through the generic path (Python fetch + collate).
    gen_dl = DataLoader(ds, batch_size=5, shuffle=True, generator=gen(11), collate_fn=lambda b: default_collate(b))
    slow = list(gen_dl)
    assert len(fast) == len(slow) == 8
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert same(fx, sx) and same(fy, sy)
    assert sorted(ember.cat([b[1] for b in fast]).tolist()) == list(range(37))


def test_fast_path_subset_and_noncontiguous():
    base = ember.randn(20, 6)
    x = base[:, ::2]  # non-contiguous rows
    y = ember.arange(20)
    sub = Subset(TensorDataset(x, y), [19, 3, 7, 0, 11])
    out = list(DataLoader(sub, batch_size=2))
    assert isinstance(iter(DataLoader(sub, batch_size=2)), _FastIter)
    assert ember.cat([b[1] for b in out]).tolist() == [19, 3, 7, 0, 11]
    assert same(ember.cat([b[0] for b in out]), x[ember.tensor([19, 3, 7, 0, 11])])


def test_fast_path_custom_batch_sampler_and_errors():
    ds = TensorDataset(rows(6), ember.arange(6))
    dl = DataLoader(ds, batch_sampler=[[5, 0], [2]])
    it = iter(dl)
    assert isinstance(it, _SingleProcessIter)
    b = list(it)
    assert b[0][1].tolist() == [5, 0] and b[1][1].tolist() == [2]
    with pytest.raises(IndexError, match="out of bounds"):
        list(DataLoader(ds, batch_sampler=[[0, 6]]))
    with pytest.raises(IndexError, match="out of bounds"):
        list(DataLoader(ds, sampler=[0, 1, 9], batch_size=2))


def test_prefetcher_abandon_and_error_position():
    x = rows(100)
    pf = ember._C._BatchPrefetcher([x], ember.arange(100), 10, False, 2)
    assert len(pf) == 10
    first = next(pf)
    assert first[0].tolist() == x[:10].tolist()
    del pf  # abandoned mid-epoch: the thread stops and joins
    idx = ember.tensor([0, 1, 2, 3, 500, 5])
    pf = ember._C._BatchPrefetcher([x], idx, 2, False, 2)
    assert next(pf)[0].shape == (2, 3)
    assert next(pf)[0].shape == (2, 3)
    with pytest.raises(IndexError, match="index 500 is out of bounds for dimension 0 with size 100"):
        next(pf)
    with pytest.raises(StopIteration):
        next(pf)


def test_loader_generic_dataset_and_no_batching():
    dl = DataLoader(Squares(5), batch_size=2, shuffle=False)
    assert [b.tolist() for b in dl] == [[0, 1], [4, 9], [16]]
    nb = list(DataLoader(Squares(3), batch_size=None))
    assert nb == [0, 1, 4]  # default_convert leaves Python numbers alone
    arr = list(DataLoader([np.ones(2)] * 2, batch_size=None))
    assert isinstance(arr[0], ember.Tensor)
    c = list(DataLoader(Squares(4), batch_size=2, collate_fn=lambda b: sum(b)))
    assert c == [1, 13]


def test_loader_iterable_single_process():
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    assert len(DataLoader(Stream(5), batch_size=2)) == 3
    assert list(DataLoader(Stream(2), batch_size=None)) == [0, 1]


def test_loader_shuffle_generator_reproducible():
    ds = Squares(30)
    a = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, generator=gen(4))]
    b = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, generator=gen(4))]
    assert a == b and sorted(sum(a, [])) == sorted(i * i for i in range(30))
    ember.manual_seed(0)
    c = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True)]
    ember.manual_seed(0)
    d = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True)]
    assert c == d


def test_loader_argument_errors():
    ds = Squares(4)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        dl.batch_size = 3


class Pinnable:
    def __init__(self):
        self.pinned = False

    def pin_memory(self):
        self.pinned = True
        return self


def test_pin_memory_without_cuda_is_a_warned_noop():
    if ember.cuda.is_available():
        pytest.skip("CUDA present: pinning is real")
    with pytest.warns(UserWarning, match="pin_memory"):
        dl = DataLoader(TensorDataset(rows(4)), batch_size=2, pin_memory=True)
    out = list(dl)
    assert out[0][0].shape == (2, 3)


def test_pin_walks_containers():
    from ember.utils.data.dataloader import _pin
    p = Pinnable()
    out = _pin({"a": [p], "b": "s"})
    assert out["a"][0].pinned and out["b"] == "s"
    warnings.simplefilter("ignore")


def test_tensor_pin_memory():
    t = ember.randn(4, 6)[:, ::2]
    assert not t.is_pinned()
    if not ember._C._data_pinning_available():
        with pytest.raises(RuntimeError, match="Found no NVIDIA driver|Cannot access accelerator device"):
            t.pin_memory()
        with pytest.raises(RuntimeError, match="Found no NVIDIA driver|Cannot access accelerator device"):
            ember._C._BatchPrefetcher([rows(4)], ember.arange(4), 2, False, 2, pinned=True).__next__()
        return
    p = t.pin_memory()
    assert p.is_pinned() and p.is_contiguous() and p.tolist() == t.tolist()
    assert p.pin_memory() is p
    pf = ember._C._BatchPrefetcher([rows(4)], ember.arange(4), 2, False, 2, pinned=True)
    assert all(b[0].is_pinned() for b in pf)
    if ember.cuda.is_available():
        out = list(DataLoader(TensorDataset(rows(6)), batch_size=4, pin_memory=True))
        assert all(b[0].is_pinned() for b in out)
        assert out[0][0].to("cuda", non_blocking=True).cpu().tolist() == rows(6)[:4].tolist()
