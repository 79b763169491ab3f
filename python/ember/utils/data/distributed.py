"""DistributedSampler: each of ``num_replicas`` processes sees its own shard of an epoch."""
import math

import ember

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _dist_default(what):
    dist = getattr(ember, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "world" else dist.get_rank()


class DistributedSampler(Sampler):
    """Splits the (optionally shuffled) indices across replicas. Without ``drop_last`` the
    index list is padded by repeating its start so that every replica gets the same count;
    with it the tail is dropped. Call ``set_epoch`` each epoch to reshuffle."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _dist_default("world")
        if rank is None:
            rank = _dist_default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch; with ``shuffle`` each epoch has its own order."""
        self.epoch = epoch
