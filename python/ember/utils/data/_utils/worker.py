"""DataLoader worker processes: the loop each worker runs and get_worker_info()."""
import os
import pickle
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

import numpy as np

import ember

__all__ = ["WorkerInfo", "get_worker_info"]

#: How often (seconds) a waiting worker checks that its parent is still alive.
STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


class WorkerInfo:
    """What a worker process knows about itself: ``id``, ``num_workers``, ``seed`` and its
    copy of ``dataset``. Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """In a DataLoader worker process, its WorkerInfo; in the main process, None.

    Use it in an IterableDataset's ``__iter__`` to give each worker its own shard, or in a
    ``worker_init_fn`` to configure the worker's copy of the dataset."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its type and the
    formatted traceback text, and re-raised there."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.exc_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        # An exception class the main process cannot unpickle (one defined inside a
        # function) would make this wrapper unsendable: carry its name only, and re-raise
        # it as a RuntimeError.
        try:
            pickle.loads(pickle.dumps(self.exc_type))
        except Exception:
            self.exc_type = None

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


def _loads(data):
    return ForkingPickler.loads(data)


class _Pickled:
    """Note [Unpicklable worker results]: a result already pickled in the worker (with ForkingPickler, so tensors still travel
    as shared-memory file descriptors). multiprocessing's queue pickles what it is given in
    a background thread and, when that fails, only prints the error and drops the item: the
    main process then waited forever for it. Pickling first lets the worker send the error
    instead (Note [Unpicklable worker results])."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return (_loads, (self.data,))


def _pickled_result(idx, data, worker_id):
    """(idx, data) pickled for the data queue, or, when `data` cannot be pickled, an
    ExceptionWrapper naming the problem with the worker's traceback."""
    try:
        return _Pickled(bytes(ForkingPickler.dumps((idx, data))))
    except Exception:
        err = ExceptionWrapper(
            sys.exc_info(),
            f"in DataLoader worker process {worker_id} while sending a result to the main process "
            f"(the {type(data).__name__} the dataset/collate_fn returned cannot be pickled; return "
            "tensors, numbers, strings and containers of them)")
        return _Pickled(bytes(ForkingPickler.dumps((idx, err))))


class _KeyErrorMessage(str):
    """KeyError quotes its argument in str(); this keeps the traceback readable."""

    def __repr__(self):
        return self


class IterableStop:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to (and echoed by) persistent workers at the start of a new epoch."""


def _numpy_seed(base_seed, worker_id):
    return np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFFFFFFFFFF]).generate_state(4)


def _parent_alive(ppid):
    return os.getppid() == ppid


def worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers, ppid):
    """The body of a worker process: fetch the index batches sent on ``index_queue`` and put
    (task id, batch) — or an ExceptionWrapper — on ``data_queue``, until told to stop."""
    global _worker_info
    from ..dataloader import _fetcher  # noqa: PLC0415  (imported in the child)
    from .reduction import init_reductions
    init_reductions()  # a spawned worker starts without them
    try:
        ember.set_num_threads(1)
        seed = base_seed + worker_id
        random.seed(seed)
        ember.manual_seed(seed)
        np.random.seed(_numpy_seed(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if not _parent_alive(ppid) or done_event.is_set():
                    break
                continue
            if r is None:
                break
            if isinstance(r, ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if init_error is None:
                    fetcher = _fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    data = IterableStop(worker_id)
                    iteration_end = True
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            data_queue.put(_pickled_result(idx, data, worker_id))
            del data
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
