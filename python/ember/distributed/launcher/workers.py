"""The launcher's worker processes: start with torchrun's environment, watch, stop (the whole
process group of each worker: SIGTERM, then SIGKILL), and keep the tail of each worker's stderr
so that a failure is reported with its traceback even without ``@record``."""
import os
import signal
import subprocess
import sys
import threading
import time

_TAIL_BYTES = 64 * 1024


class Worker:
    def __init__(self, local_rank, rank, cmd, env, error_file, log_dir=None):
        self.local_rank = local_rank
        self.rank = rank
        self.error_file = error_file
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._threads = []
        self._files = []
        out_file = err_file = None
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            out_file = open(os.path.join(log_dir, "stdout.log"), "ab")  # noqa: SIM115
            err_file = open(os.path.join(log_dir, "stderr.log"), "ab")  # noqa: SIM115
            self._files = [out_file, err_file]
        # Its own session: stopping a worker stops everything it started too.
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE if log_dir else None,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.pid = self.proc.pid
        self.started = time.time()
        self._pump(self.proc.stderr, sys.stderr.buffer, err_file, keep=True)
        if log_dir:
            self._pump(self.proc.stdout, sys.stdout.buffer, out_file, keep=False)

    def _pump(self, src, dst, copy, keep):
        def run():
            for chunk in iter(lambda: src.read1(65536), b""):
                if keep:
                    with self._lock:
                        self._tail += chunk
                        del self._tail[:-_TAIL_BYTES]
                try:
                    dst.write(chunk)
                    dst.flush()
                except (OSError, ValueError):
                    pass
                if copy is not None:
                    copy.write(chunk)
                    copy.flush()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._threads.append(t)

    def poll(self):
        return self.proc.poll()

    def last_traceback(self):
        """The last Python traceback the worker printed on stderr (or None)."""
        for t in self._threads:
            t.join(timeout=2.0)
        with self._lock:
            text = self._tail.decode("utf-8", "replace")
        at = text.rfind("Traceback (most recent call last):")
        return text[at:].rstrip() if at >= 0 else None

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self):
        for t in self._threads:
            t.join(timeout=2.0)
        for f in self._files:
            f.close()


def stop_workers(workers, grace=5.0):
    """SIGTERM to every live worker's process group, SIGKILL to those still alive after
    ``grace`` seconds; waits for all of them."""
    live = [w for w in workers if w.poll() is None]
    for w in live:
        w.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for w in live:
        try:
            w.proc.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            pass
    for w in workers:
        if w.poll() is None:
            w.signal(signal.SIGKILL)
        try:
            w.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
        # Children the worker left in its session.
        w.signal(signal.SIGKILL)
        w.close()
