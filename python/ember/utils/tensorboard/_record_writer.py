"""Event files: TFRecord framing (masked CRC-32C, computed in C++) and a background writer."""
import os
import queue
import socket
import struct
import threading
import time

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


class EventFileWriter:
    """Writes serialized Events to ``logdir/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``
    on a background thread; events queue up to ``max_queue`` and are flushed to disk at least
    every ``flush_secs`` seconds."""

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=""):
        global _uid
        os.makedirs(logdir, exist_ok=True)
        with _uid_lock:
            _uid += 1
            uid = _uid
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{uid}"
        self.logdir = logdir
        self.path = os.path.join(logdir, name + filename_suffix)
        self._file = open(self.path, "wb")
        self._queue = queue.Queue(max(1, max_queue))
        self._flush_secs = flush_secs
        self._closed = False
        self._error = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="ember-tensorboard-writer", daemon=True)
        self._thread.start()
        ev = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        self.add_event(ev)
        self.flush()

    def _run(self):
        last_flush = time.monotonic()
        while True:
            timeout = max(0.0, self._flush_secs - (time.monotonic() - last_flush))
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = b""  # nothing arrived in flush_secs: time for the periodic flush
                got = False
            else:
                got = True
            try:
                with self._lock:
                    if item:
                        self._file.write(frame(item))
                    if item is None or time.monotonic() - last_flush >= self._flush_secs:
                        self._file.flush()
                        last_flush = time.monotonic()
            except Exception as e:  # disk full, ...: reported by the next call
                self._error = e
            if got:
                self._queue.task_done()
            if item is None:
                return

    def _check(self):
        if self._error is not None:
            e, self._error = self._error, None
            raise RuntimeError(f"SummaryWriter: writing {self.path} failed: {e}") from e

    def add_event(self, event):
        self._check()
        if self._closed:
            raise RuntimeError("SummaryWriter: cannot write to a closed writer")
        self._queue.put(event.SerializeToString())

    def flush(self):
        """Blocks until every queued event is written and the file is flushed."""
        if self._closed:
            return
        self._queue.join()
        with self._lock:
            self._file.flush()
        self._check()

    def close(self):
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        self._file.close()
        self._check()
