"""DataLoader: batches of a dataset, in the main process or in worker processes.

Three ways through, picked per epoch:

* the C++ fast path (``_FastIter``): a map-style dataset of tensors (TensorDataset, a
  Subset of one, the vision datasets with tensor transforms), automatic batching, the
  default collate and no workers. The epoch's indices are one int64 tensor; a C++ thread
  gathers each field's rows for the next batches (Note [Batch prefetcher]) while Python
  consumes the current one.
* ``_SingleProcessIter``: any dataset, in the main process.
* ``_MultiProcessIter``: ``num_workers`` forked worker processes fetch batches; tensors
  come back through shared memory (``_utils/reduction.py``).
"""
import atexit
import itertools
import multiprocessing
import os
import queue
import signal
import sys
import time
import warnings
import weakref

import ember

from ._utils import worker as _worker
from ._utils.collate import default_collate, default_convert
from ._utils.reduction import init_reductions
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info

#: How often (seconds) the main process checks that its workers are alive while waiting.
_WORKER_CHECK_INTERVAL = 0.1

# Note [Worker shutdown]: the workers of an iterator are shut down (1) when it is exhausted,
# (2) when anything in the main process raises inside the iterator (the sampler, a worker's
# error, a timeout, KeyboardInterrupt), (3) when it is garbage collected, and (4) at interpreter
# exit, by an atexit hook that runs while threads can still start. (4) matters because an
# exception's traceback can keep the iterator alive until the interpreter finalizes, when a
# queue's feeder thread can no longer start: putting the stop message then would wait forever,
# so a shutdown that finds the interpreter finalizing only sets the event and terminates.
_live_iterators = weakref.WeakSet()


def _shutdown_live_iterators():
    for it in list(_live_iterators):
        try:
            it._shutdown_workers()
        except Exception:
            pass


atexit.register(_shutdown_live_iterators)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: a stream of Nones."""

    def __iter__(self):
        while True:
            yield None


# ---- fetchers: index (or index batch) -> data --------------------------------------------


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        # A dataset of tensors with the default collate: gather the batch in C++ (into
        # shared memory in a worker) instead of sample by sample.
        self.fast = _fast_source_checked(dataset) if auto_collation and collate_fn is default_collate else None

    def fetch(self, index):
        if self.fast is not None:
            fields, imap, post = self.fast
            idx = ember.tensor(list(index), dtype=ember.int64)
            if imap is not None:
                idx = imap[idx]
            if post is not None:  # the transform makes new tensors: gather into ordinary memory
                return post(ember._C._data_gather(fields, idx, False))
            return ember._C._data_gather(fields, idx, _worker.get_worker_info() is not None)
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if kind == "iterable" else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# ---- pinning ------------------------------------------------------------------------------


def _pin(data):
    """Pins every tensor in `data` (and anything with its own ``pin_memory()``)."""
    if isinstance(data, ember.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, dict):
        return type(data)({k: _pin(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, tuple):
        return tuple(_pin(v) for v in data)
    if isinstance(data, list):
        return [_pin(v) for v in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


def _pinning_available():
    return ember._C._data_pinning_available() and ember.cuda.is_available()


# ---- the fast path --------------------------------------------------------------------------


def _fast_source(dataset):
    """(fields, index map or None, post) when `dataset` is tensors gathered by row, else None.

    ``post`` (or None) turns the gathered fields into the collated batch."""
    if type(dataset).__getitem__ is TensorDataset.__getitem__ and isinstance(dataset, TensorDataset):
        return list(dataset.tensors), None, None
    if type(dataset).__getitem__ is Subset.__getitem__ and isinstance(dataset, Subset):
        inner = _fast_source(dataset.dataset)
        if inner is None:
            return None
        fields, imap, post = inner
        sub = dataset.indices
        sub = sub.to(ember.int64) if isinstance(sub, ember.Tensor) else ember.tensor(list(sub), dtype=ember.int64)
        if sub.dim() != 1:
            return None
        return fields, (sub if imap is None else imap[sub]), post
    hook = getattr(dataset, "_ember_fast_source", None)
    if hook is not None:
        got = hook()
        if got is not None:
            fields, post = got
            return list(fields), None, post
    return None


def _fast_source_checked(dataset):
    """_fast_source, when every field is a CPU tensor that the C++ gather can take."""
    src = _fast_source(dataset)
    if src is None:
        return None
    fields = src[0]
    if not fields or not all(isinstance(f, ember.Tensor) and f.device.type == "cpu" and f.dim() >= 1
                             and not f.requires_grad for f in fields):
        return None
    return src


class _FastIter:
    """Batches gathered in C++ on a background thread (see the module docstring).

    The sampler's indices arrive in chunks of at most ``_CHUNK`` (RandomSampler's
    ``_index_chunks``), regrouped into whole batches; one prefetcher gathers each group, so an
    epoch of any length (``num_samples=int(1e10)``) holds only one chunk of indices."""

    _CHUNK = 1 << 20  # indices per prefetcher (8 MiB); a multiple of 32

    def __init__(self, loader, source):
        fields, imap, post = source
        self._fields, self._imap, self._post = fields, imap, post
        self._pin = loader._pin_enabled
        loader._draw_base_seed()
        bs = loader.batch_sampler
        self._bs, self._drop_last = bs.batch_size, bs.drop_last
        self._len = len(loader)
        sampler = bs.sampler
        if type(sampler) is SequentialSampler:
            n = len(sampler)
            chunks = (ember.arange(i, min(i + self._CHUNK, n), dtype=ember.int64)
                      for i in range(0, n, self._CHUNK))
        else:
            chunks = sampler._index_chunks(self._CHUNK)
        self._groups = self._whole_batches(chunks)
        self._pf = None
        self._next_prefetcher()  # the first group's gather starts now

    def _whole_batches(self, chunks):
        """Regroups index chunks into tensors of whole batches (the last one may be partial);
        yields (indices, is_last)."""
        pending, held = [], 0
        prev = None
        for c in chunks:
            if c.numel() == 0:
                continue
            pending.append(c)
            held += c.numel()
            if held >= self._CHUNK and held >= self._bs:
                cut = held - held % self._bs
                cat = pending[0] if len(pending) == 1 else ember.cat(pending)
                if prev is not None:
                    yield prev, False
                prev = cat[:cut]
                rest = cat[cut:]
                pending, held = ([rest], rest.numel()) if rest.numel() else ([], 0)
        tail = None
        if pending:
            tail = pending[0] if len(pending) == 1 else ember.cat(pending)
        if prev is not None:
            yield prev, tail is None
        if tail is not None:
            yield tail, True

    def _next_prefetcher(self):
        try:
            idx, last = next(self._groups)
        except StopIteration:
            self._pf = None
            return False
        if self._imap is not None:
            idx = self._imap[idx]
        # With pin_memory the C++ thread gathers straight into pinned memory (Note [Pinned
        # staging]); a Python transform after it makes new tensors, pinned here.
        self._pf = ember._C._BatchPrefetcher(self._fields, idx, self._bs,
                                             self._drop_last and last, 2, pinned=self._pin)
        return True

    def __iter__(self):
        return self

    def __len__(self):
        return self._len

    def __next__(self):
        while True:
            if self._pf is None:
                raise StopIteration
            try:
                batch = next(self._pf)
                break
            except StopIteration:
                if not self._next_prefetcher():
                    raise
        if self._post is not None:
            batch = self._post(batch)
            return _pin(batch) if self._pin else batch
        return batch


# ---- single process -------------------------------------------------------------------------


class _SingleProcessIter:
    def __init__(self, loader):
        self._loader = loader
        loader._draw_base_seed()
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _fetcher(loader._dataset_kind, loader.dataset, loader._auto_collation,
                                 loader.collate_fn, loader.drop_last)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        return _pin(data) if self._loader._pin_enabled else data


# ---- worker processes ---------------------------------------------------------------------


_TOO_MANY_FILES = (
    "Too many open files: the DataLoader's worker processes pass each batch's tensors to the main "
    "process as file descriptors, and this process ran out of them, so it can no longer receive "
    "batches. Raise the limit (`ulimit -n` in the shell, or resource.setrlimit(RLIMIT_NOFILE) in "
    "Python), keep fewer batches alive at once (a smaller prefetch_factor, or do not hold on to "
    "old batches), or use num_workers=0.")


def _out_of_fds(e):
    """Whether receiving a batch failed for want of file descriptors: multiprocessing's fd
    passing reports it as 'received 0 items of ancdata' (the kernel dropped the fds), or
    EMFILE/ENFILE."""
    import errno  # noqa: PLC0415

    return ("ancdata" in str(e)
            or (isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE)))


class _MultiProcessIter:
    """Feeds index batches to worker processes and returns their results (in sampler order
    unless ``in_order=False``). Detects dead workers and timeouts; shuts the workers down
    when exhausted, abandoned (garbage collected) or on error."""

    def __init__(self, loader):
        init_reductions()
        self._loader = loader
        self._kind = loader._dataset_kind
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                              else None)
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        base_seed = loader._draw_base_seed()
        self._done_event = ctx.Event()
        self._data_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        _live_iterators.add(self)
        try:
            self._start_workers(ctx, loader, base_seed)
            self._reset(first=True)
        except BaseException:  # Note [Worker shutdown] (2)
            self._shutdown_workers()
            raise

    def _start_workers(self, ctx, loader, base_seed):
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker.worker_loop, daemon=True,
                            args=(self._kind, loader.dataset, iq, self._data_queue, self._done_event,
                                  loader._auto_collation, loader.collate_fn, loader.drop_last,
                                  base_seed, loader.worker_init_fn, i, self._num_workers, os.getpid()))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)

    def _reset(self, first=False):
        if first:
            return self._reset_epoch(first)
        try:
            return self._reset_epoch(first)
        except BaseException:  # Note [Worker shutdown] (2)
            self._shutdown_workers()
            raise

    def _reset_epoch(self, first):
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # task id -> (worker id,) while pending, (worker id, data) when here
        self._tasks_outstanding = 0
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:
            # Persistent workers: each echoes ResumeIteration after finishing stale tasks.
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            pending = self._num_workers
            while pending:
                _, data = self._get_data()
                if isinstance(_, _worker.ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _check_workers(self):
        dead = [w for w, active in zip(self._workers, self._active) if active and not w.is_alive()]
        dead += [w for w in self._workers if w.exitcode is not None and w.exitcode < 0]
        if dead:
            w = dead[0]
            self._shutdown_workers()
            if w.exitcode is not None and w.exitcode < 0:
                try:
                    name = signal.Signals(-w.exitcode).name
                except ValueError:
                    name = str(-w.exitcode)
                raise RuntimeError(f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. ")
            pids = ", ".join(str(d.pid) for d in dead)
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _worker_died(self, err):
        """A queue that breaks under us (EOFError, a broken pipe) means a worker died in the
        middle of a message: name the worker and its signal, as PyTorch does, not the pipe.
        The dead worker is reaped within moments; if none is, the error stands."""
        deadline = time.monotonic() + 5.0
        while not self._shutdown and time.monotonic() < deadline:
            try:
                self._check_workers()
            except RuntimeError as died:
                raise died from err
            time.sleep(0.02)
        raise err

    def _get_data(self):
        start = time.monotonic()
        while True:
            wait = _WORKER_CHECK_INTERVAL
            if self._timeout > 0:
                left = self._timeout - (time.monotonic() - start)
                if left <= 0:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, left)
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers()
            except (EOFError, ConnectionError) as e:
                self._worker_died(e)
            except (RuntimeError, OSError) as e:
                if not _out_of_fds(e):
                    raise
                self._shutdown_workers()
                raise RuntimeError(_TOO_MANY_FILES) from e

    def __next__(self):
        try:
            return self._next()
        except StopIteration:
            raise
        except (EOFError, ConnectionError) as e:  # sending an index to a dead worker
            try:
                self._worker_died(e)
            finally:
                self._shutdown_workers()
        except BaseException:  # Note [Worker shutdown] (2)
            self._shutdown_workers()
            raise

    def _next(self):
        while True:
            if self._shutdown:
                raise StopIteration
            # Skip tasks already returned (in_order=False) or whose worker has ended its
            # (iterable) stream.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is None:
                    self._rcvd_idx += 1
                    continue
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info.get(self._rcvd_idx)
            if info is not None and len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            if isinstance(idx, _worker.ResumeIteration):
                continue
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableStop):
                if self._persistent:
                    self._active[data.worker_id] = False
                else:
                    self._mark_worker_done(data.worker_id)
                self._task_info.pop(idx, None)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                self._task_info.pop(idx, None)
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process(data)
            self._task_info[idx] = (self._task_info[idx][0], data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return _pin(data) if self._loader._pin_enabled else data

    def _mark_worker_done(self, wid):
        self._active[wid] = False
        self._index_queues[wid].put(None)

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        finalizing = sys.is_finalizing()  # Note [Worker shutdown] (4)
        try:
            self._done_event.set()
            for q in self._index_queues if not finalizing else ():
                try:
                    q.put(None)
                except Exception:
                    pass
            # For all workers together; none while finalizing, where they are terminated.
            deadline = time.monotonic() + (0.0 if finalizing else 2.0)
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        finally:
            if self._loader._iterator is self:
                self._loader._iterator = None

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass


# ---- the DataLoader ---------------------------------------------------------------------------


class DataLoader:
    """Iterates over batches of ``dataset`` (see torch.utils.data.DataLoader for the
    arguments; all are supported). ``pin_memory`` pins only when CUDA is available; on a
    CPU-only machine it warns once and leaves tensors as they are, as torch does."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.persistent_workers = persistent_workers

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self._user_collate = collate_fn is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._pin_enabled = False
        if pin_memory:
            if _pinning_available():
                self._pin_enabled = True
            else:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                              "device pinned memory won't be used.", stacklevel=2)
        self.__initialized = True

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __setattr__(self, attr, val):
        if self.__dict__.get("_DataLoader__initialized") and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is "
                             "initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _draw_base_seed(self):
        return int(ember.empty((), dtype=ember.int64).random_(generator=self.generator).item())

    def _fast_source_if_eligible(self):
        """The prefetching C++ path's source when this loader may use it (see _fast_source)."""
        if self._dataset_kind != "map" or not self._auto_collation:
            return None
        if self.collate_fn is not default_collate:
            return None
        bs = self.batch_sampler
        if type(bs) is not BatchSampler or type(bs.sampler) not in (SequentialSampler, RandomSampler):
            return None
        return _fast_source_checked(self.dataset)

    def _get_iterator(self):
        if self.num_workers == 0:
            src = self._fast_source_if_eligible()
            if src is not None:
                return _FastIter(self, src)
            return _SingleProcessIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset()
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        cpus = os.cpu_count() or 1
        if self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. "
                          f"Our suggested max number of worker in current system is {cpus}.", stacklevel=2)

