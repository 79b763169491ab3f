"""DistributedSampler against the practitioner's notes (seed 004): pad the index list to a
multiple of num_replicas by repeating its start (or drop the tail with drop_last), shuffle with
a permutation seeded by seed + epoch (set_epoch reshuffles), then rank r takes
indices[r:total_size:num_replicas]."""
import math

import pytest

import ember
from ember.utils.data import TensorDataset
from ember.utils.data.distributed import DistributedSampler


def notes_algorithm(n, num_replicas, rank, shuffle, seed, epoch, drop_last):
    if shuffle:
        g = ember.Generator()
        g.manual_seed(seed + epoch)
        indices = ember.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    if drop_last and n % num_replicas:
        num_samples = math.ceil((n - num_replicas) / num_replicas)
    else:
        num_samples = math.ceil(n / num_replicas)
    total_size = num_samples * num_replicas
    if not drop_last:
        pad = total_size - len(indices)
        indices += (indices * math.ceil(pad / len(indices)))[:pad] if pad > len(indices) \
            else indices[:pad]
    else:
        indices = indices[:total_size]
    return indices[rank:total_size:num_replicas]


@pytest.mark.parametrize("n,replicas", [(10, 3), (12, 4), (5, 8), (1, 2), (100, 7)])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_matches_the_notes(n, replicas, shuffle, drop_last):
    ds = TensorDataset(ember.arange(n))
    for epoch in (0, 3):
        shards = []
        for rank in range(replicas):
            s = DistributedSampler(ds, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=5,
                                   drop_last=drop_last)
            s.set_epoch(epoch)
            got = list(iter(s))
            assert got == notes_algorithm(n, replicas, rank, shuffle, 5, epoch, drop_last)
            assert len(got) == len(s)
            shards.append(got)
        assert len({len(x) for x in shards}) == 1  # every rank the same count
        seen = {i for x in shards for i in x}
        if drop_last and n < replicas:
            assert shards == [[]] * replicas  # nothing to give out
        elif not drop_last:
            assert seen == set(range(n))  # padded, nothing lost
        else:
            assert len(seen) == sum(map(len, shards))  # no duplicates


def test_set_epoch_reshuffles_identically_on_every_rank():
    ds = TensorDataset(ember.arange(50))
    a = DistributedSampler(ds, num_replicas=2, rank=0, seed=1)
    b = DistributedSampler(ds, num_replicas=2, rank=1, seed=1)
    first = list(a)
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first
    assert sorted(list(a) + list(b)) == list(range(50))


def test_defaults_come_from_the_process_group():
    import ember.distributed as dist

    if not dist.is_gloo_available():
        pytest.skip("built without Gloo")
    with pytest.raises(RuntimeError, match="distributed package"):
        DistributedSampler(TensorDataset(ember.arange(4)))
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        s = DistributedSampler(TensorDataset(ember.arange(4)))
        assert (s.num_replicas, s.rank, len(s)) == (1, 0, 4)
    finally:
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(TensorDataset(ember.arange(4)), num_replicas=2, rank=2)
