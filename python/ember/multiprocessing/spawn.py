"""spawn / start_processes: run ``fn(i, *args)`` in ``nprocs`` processes and turn the first
failure into an exception in the parent (with the child's traceback), after stopping the
others (torch.multiprocessing.spawn)."""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping us
    except Exception:
        import traceback

        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _stop_all(self, grace_period):
        for p in self.processes:
            if p.is_alive():
                p.terminate()  # SIGTERM
        deadline = time.monotonic() + grace_period
        for p in self.processes:
            p.join(max(deadline - time.monotonic(), 0))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()

    def _remove_error_files(self):
        for f in self.error_files:
            try:
                os.unlink(f)
            except OSError:
                pass

    def join(self, timeout=None, grace_period=None):
        """Waits up to ``timeout`` for the processes; True once all exited cleanly. The first
        failure stops the others (SIGTERM, then SIGKILL after ``grace_period`` seconds) and
        raises ProcessRaisedException / ProcessExitedException."""
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            done = len(self.sentinels) == 0
            if done:
                self._remove_error_files()
            return done
        self._stop_all(5.0 if grace_period is None else grace_period)
        self.sentinels.clear()
        failed = self.processes[error_index]
        error_file = self.error_files[error_index]
        try:
            if not os.access(error_file, os.R_OK):
                code = failed.exitcode
                if code < 0:
                    name = signal.Signals(-code).name
                    raise ProcessExitedException(
                        f"process {error_index} terminated with signal {name}", error_index,
                        failed.pid, code, name)
                raise ProcessExitedException(f"process {error_index} terminated with exit code "
                                             f"{code}", error_index, failed.pid, code)
            with open(error_file, "rb") as fh:
                trace = pickle.load(fh)
            msg = f"\n\n-- Process {error_index} terminated with the following error:\n{trace}"
            raise ProcessRaisedException(msg, error_index, failed.pid)
        finally:
            self._remove_error_files()


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.",
                      stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Starts ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; joins them
    (raising the first failure) or, with ``join=False``, returns their ProcessContext."""
    mp = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="ember-spawn-", suffix=".pickle")
        os.close(fd)
        os.unlink(path)  # the child creates it only if it fails
        p = mp.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    try:
        while not context.join():
            pass
    except BaseException:
        context._stop_all(5.0)  # an error here, or Ctrl-C in the parent: leave nothing running
        raise


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the spawn start method: ``fn(i, *args)`` in each of ``nprocs``
    fresh interpreters (``fn`` must be importable: a module-level function)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      f"To use a different start_method use:\n\t\t "
                      f"ember.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
