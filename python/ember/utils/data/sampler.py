"""Samplers: which dataset indices a DataLoader visits, and in what order.

Every sampler is lazy, as PyTorch's: ``__iter__`` is a generator that draws its random numbers
as it is consumed (RandomSampler from 32 draws at a time up, the others in bounded chunks), so
``RandomSampler(data, replacement=True, num_samples=int(1e10))`` allocates nothing up front.
With no ``generator``, RandomSampler seeds a private one from the default generator when
iteration starts, as PyTorch does. The C++ loader path reads RandomSampler's indices in larger
chunks (``_index_chunks``); the Philox draws do not depend on the chunking when every chunk but
the last is a multiple of 32, so both paths visit the same indices."""
import itertools

import ember

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Iterates over dataset indices (or index lists, for a batch sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def _seeded_generator(generator):
    """`generator`, or a fresh one seeded from the default generator (as torch does)."""
    if generator is not None:
        return generator
    seed = int(ember.empty((), dtype=ember.int64).random_().item())
    g = ember.Generator()
    g.manual_seed(seed)
    return g


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws, with or without replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _index_chunks(self, chunk=None):
        """The epoch's indices as int64 tensors, in order: draws with replacement ``chunk`` at a
        time (a multiple of 32; by default 32 first, doubling up to 4096, so a short look at a
        huge sampler draws little and a long epoch makes few calls), else one permutation of
        the data at a time."""
        n = len(self.data_source)
        g = _seeded_generator(self.generator)
        total = self.num_samples
        if self.replacement:
            size = chunk or 32
            while total > 0:
                k = min(size, total)
                yield ember.randint(0, n, (k,), dtype=ember.int64, generator=g)
                total -= k
                if chunk is None:
                    size = min(2 * size, 4096)
        else:
            for _ in range(total // n):
                yield ember.randperm(n, generator=g)
            yield ember.randperm(n, generator=g)[: total % n]

    def __iter__(self):
        for idx in self._index_chunks():
            yield from idx.tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        perm = ember.randperm(len(self.indices), generator=self.generator).tolist()
        for i in perm:
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = ember.as_tensor(weights, dtype=ember.float64)
        if w.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    #: Draws per multinomial call with replacement (even, so the draws do not depend on it).
    _CHUNK = 1 << 16

    def __iter__(self):
        if not self.replacement:  # at most len(weights) draws: one call, as PyTorch's
            yield from ember.multinomial(self.weights, self.num_samples, False,
                                         generator=self.generator).tolist()
            return
        left = self.num_samples
        while left > 0:
            k = min(left, self._CHUNK)
            yield from ember.multinomial(self.weights, k, True, generator=self.generator).tolist()
            left -= k

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        batch = list(itertools.islice(it, self.batch_size))
        while len(batch) == self.batch_size:
            yield batch
            batch = list(itertools.islice(it, self.batch_size))
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
