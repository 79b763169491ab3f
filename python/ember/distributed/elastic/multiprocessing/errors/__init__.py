"""Errors of launched workers: the ``@record`` decorator writes a worker's exception to the
error file the launcher names (TORCHELASTIC_ERROR_FILE), and ChildFailedError is what the
launcher raises when a worker fails (its message is the failure summary)."""
import functools
import json
import os
import time
import traceback

__all__ = ["record", "ChildFailedError", "ProcessFailure", "ErrorHandler"]


class ProcessFailure:
    """One failed worker: its ranks, pid, exit code, time, error file and traceback."""

    def __init__(self, local_rank, pid, exitcode, error_file, rank=None, traceback_text=None,
                 timestamp=None, host=None, message=None):
        self.local_rank = local_rank
        self.rank = local_rank if rank is None else rank
        self.pid = pid
        self.exitcode = exitcode
        self.error_file = error_file
        self.timestamp = int(time.time()) if timestamp is None else timestamp
        self.host = host or os.uname().nodename
        self.message = message
        self.traceback = traceback_text
        if error_file and os.path.isfile(error_file):
            try:
                with open(error_file) as fh:
                    data = json.load(fh)
                msg = data.get("message", {})
                if isinstance(msg, dict):
                    self.message = msg.get("message", self.message)
                    self.traceback = msg.get("extraInfo", {}).get("py_callstack", self.traceback)
            except (OSError, ValueError):
                pass

    def signal_name(self):
        import signal

        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return f"signal {-self.exitcode}"
        return "<N/A>"

    def timestamp_isoformat(self):
        import datetime

        return datetime.datetime.fromtimestamp(self.timestamp).isoformat(sep="_")


def _format_failure(idx, f):
    sig = f" (signal {f.signal_name()})" if f.exitcode < 0 else ""
    tb = (f.traceback or "").rstrip()
    if tb:
        tb = tb.replace("\n", "\n    ")
    else:
        tb = ("<N/A> (the worker wrote no traceback: it was killed, or exited without "
              "raising)")
    return (f"[{idx}]:\n"
            f"  time      : {f.timestamp_isoformat()}\n"
            f"  host      : {f.host}\n"
            f"  rank      : {f.rank} (local_rank: {f.local_rank})\n"
            f"  exitcode  : {f.exitcode}{sig} (pid: {f.pid})\n"
            f"  error_file: {f.error_file if f.error_file and os.path.isfile(f.error_file) else '<N/A>'}\n"
            f"  traceback : {tb}")


class ChildFailedError(Exception):
    """Raised by the launcher when workers fail; ``failures`` maps rank -> ProcessFailure."""

    def __init__(self, name, failures):
        self.name = name
        self.failures = failures
        super().__init__(self.format_msg())

    def get_first_failure(self):
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        width = 60
        root_rank, root = self.get_first_failure()
        others = [_format_failure(i + 1, f) for i, (r, f) in
                  enumerate(sorted(self.failures.items())) if r != root_rank]
        lines = [boarder_delim * width, f"{self.name} FAILED", section_delim * width, "Failures:"]
        lines += ["  " + o.replace("\n", "\n  ") for o in others] or ["  <NO_OTHER_FAILURES>"]
        lines += [section_delim * width, "Root Cause (first observed failure):",
                  _format_failure(0, root), boarder_delim * width]
        return "\n" + "\n".join(lines)


def _write_error(e, path):
    data = {"message": {"message": f"{type(e).__name__}: {e}",
                        "extraInfo": {"py_callstack": traceback.format_exc(),
                                      "timestamp": str(int(time.time()))}}}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            json.dump(data, fh)
    except OSError:
        pass


class ErrorHandler:
    """Writes the current exception to TORCHELASTIC_ERROR_FILE (when the launcher set it)."""

    def initialize(self):
        pass

    def record_exception(self, e):
        path = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if path:
            _write_error(e, path)


def record(fn=None, error_handler=None):
    """Decorates a worker's entry point: an exception it raises is written to the launcher's
    error file (so the launcher reports the traceback), then re-raised."""
    handler = error_handler or ErrorHandler()

    def wrap(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            handler.initialize()
            try:
                return f(*args, **kwargs)
            except SystemExit as se:
                if se.code == 0 or se.code is None:
                    return None
                raise
            except Exception as e:
                handler.record_exception(e)
                raise

        return wrapper

    return wrap(fn) if fn is not None else wrap
