"""Event files: TFRecord framing (masked CRC-32C, computed in C++) and a background writer."""
import os
import queue
import socket
import struct
import threading
import time
import weakref

from tensorboard.compat.proto import event_pb2

from ... import _C

_uid_lock = threading.Lock()
_uid = 0


def masked_crc32c(data: bytes) -> int:
    return _C._crc32c_masked(data)


def frame(data: bytes) -> bytes:
    """One TFRecord: length, masked CRC of the length, data, masked CRC of the data."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


class _State:
    """What the background thread shares with its EventFileWriter. The thread holds only
    this, never the writer, so an unclosed writer can still be collected (and closed)."""

    def __init__(self, path, max_queue, flush_secs):
        self.path = path
        self.file = open(path, "wb")
        self.queue = queue.Queue(max(1, max_queue))
        self.flush_secs = flush_secs
        self.lock = threading.Lock()
        self.error = None
        self.closed = False
        self.pid = os.getpid()  # a forked child must not close (and flush) the parent's file


def _run(st):
    """The writer thread: writes queued events, flushes the file whenever the queue drains
    (so events reach the disk without waiting for flush_secs or close()) and at least every
    flush_secs; None ends it."""
    last_flush = time.monotonic()
    while True:
        timeout = max(0.0, st.flush_secs - (time.monotonic() - last_flush))
        try:
            item = st.queue.get(timeout=timeout)
        except queue.Empty:
            item = b""  # nothing arrived in flush_secs: time for the periodic flush
            got = False
        else:
            got = True
        try:
            with st.lock:
                if item:
                    st.file.write(frame(item))
                if item is None or st.queue.empty() or time.monotonic() - last_flush >= st.flush_secs:
                    st.file.flush()
                    last_flush = time.monotonic()
        except Exception as e:  # disk full, ...: reported by the next call
            st.error = e
        if got:
            st.queue.task_done()
        if item is None:
            return


def _shutdown(st, thread):
    """Writes what is queued, stops the thread and closes the file. Runs from close(), when
    the writer is collected, and at interpreter exit (weakref.finalize), so an unclosed
    writer neither loses events nor leaks its file descriptor and thread."""
    if st.closed or st.pid != os.getpid():
        return
    st.closed = True
    if thread.is_alive():
        st.queue.put(None)
        thread.join()
    st.file.close()


class EventFileWriter:
    """Writes serialized Events to ``logdir/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``
    on a background thread; events queue up to ``max_queue`` and reach the disk when the
    queue drains, at least every ``flush_secs`` seconds, and on close, collection or exit."""

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=""):
        global _uid
        os.makedirs(logdir, exist_ok=True)
        with _uid_lock:
            _uid += 1
            uid = _uid
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{uid}"
        self.logdir = logdir
        self.path = os.path.join(logdir, name + filename_suffix)
        self._st = _State(self.path, max_queue, flush_secs)
        self._thread = threading.Thread(target=_run, args=(self._st,), name="ember-tensorboard-writer",
                                        daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._st, self._thread)
        ev = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        self.add_event(ev)
        self.flush()

    @property
    def _closed(self):
        return self._st.closed

    def _check(self):
        st = self._st
        if st.error is not None:
            e, st.error = st.error, None
            raise RuntimeError(f"SummaryWriter: writing {self.path} failed: {e}") from e

    def add_event(self, event):
        self._check()
        if self._st.closed:
            raise RuntimeError("SummaryWriter: cannot write to a closed writer")
        self._st.queue.put(event.SerializeToString())

    def flush(self):
        """Blocks until every queued event is written and the file is flushed."""
        st = self._st
        if st.closed:
            return
        st.queue.join()
        with st.lock:
            st.file.flush()
        self._check()

    def close(self):
        if self._st.closed:
            return
        self.flush()
        self._finalizer()  # _shutdown, once
        self._check()
