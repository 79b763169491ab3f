"""ember.futures: the Future that asynchronous collectives and DDP communication hooks return
(torch.futures.Future's API: wait, value, done, then, add_done_callback, set_result).

A Future made from a collective's Work (``work.get_future()``) completes when the Work does:
its callbacks then run on the thread that finished the operation (the process group's queue
thread, or the caller of a synchronous collective), holding the GIL."""
import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """The result of an asynchronous operation, available later."""

    def __init__(self, *, devices=None):
        self._cond = threading.Condition()
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []

    @classmethod
    def _from_work(cls, work):
        fut = cls()

        def _finish():
            err = work.exception()
            if err is not None:
                from ember.distributed import DistBackendError

                fut.set_exception(DistBackendError(err))
            else:
                fut.set_result(work.result())

        work._then(_finish)
        return fut

    def done(self):
        """True once the value (or an error) is set."""
        with self._cond:
            return self._done

    def wait(self):
        """Blocks until the Future completes; returns its value or raises its error."""
        with self._cond:
            while not self._done:
                self._cond.wait()
            if self._exc is not None:
                raise self._exc
            return self._value

    def value(self):
        """The value of a completed Future (raises its error; waits if it is not done yet)."""
        return self.wait()

    def then(self, callback):
        """A new Future completed with ``callback(self)`` once this one completes."""
        child = Future()

        def _run(fut):
            try:
                child.set_result(callback(fut))
            except BaseException as e:  # noqa: BLE001 - the error travels to the child
                child.set_exception(e)

        self.add_done_callback(_run)
        return child

    def add_done_callback(self, callback):
        """Runs ``callback(self)`` when the Future completes (at once if it has)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def _complete(self, value, exc):
        with self._cond:
            if self._done:
                raise RuntimeError("Future can only be marked completed once.")
            self._done, self._value, self._exc = True, value, exc
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result):
        """Completes the Future with ``result`` and runs its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Completes the Future with an error that ``wait()`` raises."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def __repr__(self):
        return f"<ember.futures.Future {'done' if self.done() else 'pending'}>"


def collect_all(futures):
    """A Future that completes with the list of ``futures`` once all of them have."""
    out = Future()
    futures = list(futures)
    if not futures:
        out.set_result([])
        return out
    left = [len(futures)]
    lock = threading.Lock()

    def _one(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)

    for f in futures:
        f.add_done_callback(_one)
    return out


def wait_all(futures):
    """Waits for every Future and returns their values (raising the first error)."""
    return [f.wait() for f in futures]
