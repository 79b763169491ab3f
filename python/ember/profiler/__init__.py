"""ember.profiler: PyTorch's torch.profiler API over ember's C++ op recording.

Every kernel dispatch, every autograd node the engine runs and every
``record_function`` scope is recorded in C++ (core/profiler.h, Note [Profiler
recording]) while a ``profile`` is collecting; this module turns the events into
``key_averages()`` tables and Chrome traces. With ``ProfilerActivity.CUDA`` each CUDA
kernel dispatch is also timed on its stream with CUDA events (Note [Profiler device
ranges]): its device time, and in the trace its kernels on per-stream tracks with flow
arrows from the launching op. Without a GPU only CPU activity exists: asking for
``ProfilerActivity.CUDA`` warns and records the CPU side.
"""
from __future__ import annotations

import contextlib
import enum
import gzip
import json
import os
import socket
import time
import warnings

from .. import _C

__all__ = ["ProfilerActivity", "ProfilerAction", "schedule", "profile", "record_function",
           "tensorboard_trace_handler", "supported_activities", "FunctionEvent", "EventList",
           "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1

    def __repr__(self):
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    from .. import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0):
    """The profiler's step schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` recorded-and-discarded and ``active`` recorded steps, ``repeat`` times (0: forever).
    """
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError("step must be non-negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class record_function(contextlib.ContextDecorator):
    """Labels a block (``with record_function("name"):``) or a function (``@record_function("n")``)
    so it shows as its own row in tables and its own span in traces."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be str, not {type(name).__name__}")
        self.name = name
        self.args = args
        self._handles = []

    def __enter__(self):
        self._handles.append(_C._record_function_enter(self.name))
        return self

    def __exit__(self, *exc):
        _C._record_function_exit(self._handles.pop())
        return False


# ------------------------------------------------------------------ events

_KIND_OP, _KIND_USER, _KIND_BACKWARD, _KIND_MEMORY = 0, 1, 2, 3


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_percent(v):
    return f"{v * 100:.2f}%"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} Gb"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} Mb"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} Kb"
    return f"{nbytes} b"


class FunctionEvent:
    """One recorded op / scope (times in microseconds)."""

    def __init__(self, id, name, thread, start_us, end_us, kind, parent_id, input_shapes,
                 input_types, self_alloc, self_free):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.time_range_start = start_us
        self.time_range_end = end_us
        self.kind = kind
        self.parent_id = parent_id
        self.cpu_parent = None
        self.cpu_children = []
        self.input_shapes = input_shapes
        self.input_types = input_types
        self.self_cpu_memory_usage = self_alloc - self_free
        self.cpu_memory_usage = 0  # filled by _link
        self.device_type = ProfilerActivity.CPU
        self.is_user_annotation = kind == _KIND_USER
        self.count = 1
        self.self_device_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_memory_usage = 0
        self.device_memory_usage = 0
        self.kernels = []  # _Kernel: the op's timed CUDA ranges (ProfilerActivity.CUDA)

    @property
    def cpu_time_total(self):
        return self.time_range_end - self.time_range_start

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={_format_time(self.cpu_time_total)} "
                f"self_cpu_time_total={_format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """Aggregated statistics of the events sharing a key (name, and input shapes when grouped)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.input_shapes = None
        self.is_user_annotation = False
        self.device_type = ProfilerActivity.CPU

    def add(self, ev):
        if self.key is None:
            self.key = ev.key
            self.input_shapes = ev.input_shapes
            self.is_user_annotation = ev.is_user_annotation
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.device_time_total += ev.device_time_total
        self.self_device_time_total += ev.self_device_time_total
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage
        self.device_memory_usage += ev.device_memory_usage
        self.self_device_memory_usage += ev.self_device_memory_usage
        return self

    __iadd__ = add

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self):
        return self.device_time_total / max(self.count, 1)

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_time = property(lambda self: self.device_time)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count} "
                f"input_shapes={self.input_shapes}>")


_SORT_KEYS = {"cpu_time", "cuda_time", "xpu_time", "device_time", "cpu_time_total",
              "cuda_time_total", "device_time_total", "self_cpu_time_total",
              "self_cuda_time_total", "self_device_time_total", "cpu_memory_usage",
              "cuda_memory_usage", "device_memory_usage", "self_cpu_memory_usage",
              "self_cuda_memory_usage", "self_device_memory_usage", "count"}


class EventList(list):
    """A list of FunctionEvent (or FunctionEventAvg) with PyTorch's table/trace helpers."""

    def __init__(self, *args, profile_memory=False, with_shapes=False, use_device=False, trace=None):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes
        self._use_device = use_device
        self._trace = trace

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = {}
        for ev in self:
            k = (ev.key, str(ev.input_shapes)) if group_by_input_shape else ev.key
            groups.setdefault(k, FunctionEventAvg()).add(ev)
        return EventList(groups.values(), profile_memory=self._profile_memory,
                         with_shapes=group_by_input_shape, use_device=self._use_device)

    def total_average(self):
        total = FunctionEventAvg()
        for ev in self:
            total.add(ev)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        return _build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            top_level_events_only=top_level_events_only,
                            profile_memory=self._profile_memory, with_shapes=self._with_shapes,
                            use_device=self._use_device)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        if self._trace is None:
            raise RuntimeError("export_chrome_trace: this event list has no trace (use the profile's "
                               "export_chrome_trace)")
        _write_trace(self._trace, path)


def _build_table(events, sort_by, row_limit, header, max_name_column_width,
                 max_shapes_column_width, top_level_events_only, profile_memory, with_shapes,
                 use_device):
    if len(events) == 0:
        return ""
    # Percentages are of the sum of self times over every event (before row_limit).
    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_device_total = sum(e.self_device_time_total for e in events)
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise AttributeError(f"table(): unknown sort_by key {sort_by!r}; expected one of "
                                 f"{sorted(_SORT_KEYS)}")
        attr = sort_by.replace("cuda_", "device_") if sort_by.startswith(("cuda", "self_cuda")) else sort_by
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    if top_level_events_only:
        events = [e for e in events if getattr(e, "cpu_parent", None) is None]
    if row_limit is not None and row_limit > 0:
        events = list(events)[:row_limit]
    else:
        events = list(events)
    name_w = max(len(str(e.key)) for e in events) + 4
    name_w = min(name_w, max_name_column_width)
    has_shapes = with_shapes and any(e.input_shapes for e in events)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width) if has_shapes else 0
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if use_device:
        headers += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device:
            headers += ["CUDA Mem", "Self CUDA Mem"]
    headers.append("# of Calls")
    if has_shapes:
        headers.append("Input Shapes")
    widths = [name_w] + [12] * (len(headers) - 1 - (1 if has_shapes else 0))
    if has_shapes:
        widths.append(shapes_w)
    spacing = 2
    fmt = "".join("{:>" + str(w) + "}" + " " * spacing for w in widths)
    sep = "".join("-" * w + " " * spacing for w in widths)


    def trunc(s, w):
        s = str(s)
        return s if len(s) <= w else s[: w - 3] + "..."

    out = []
    if header is not None:
        out.append("=" * len(sep))
        out.append(header)
    out.append(sep)
    out.append(fmt.format(*headers))
    out.append(sep)
    for e in events:
        row = [trunc(e.key, name_w),
               _format_percent(e.self_cpu_time_total / self_cpu_total if self_cpu_total else 0),
               _format_time(e.self_cpu_time_total),
               _format_percent(e.cpu_time_total / self_cpu_total if self_cpu_total else 0),
               _format_time(e.cpu_time_total),
               _format_time(e.cpu_time_total / max(e.count, 1))]
        if use_device:
            row += [_format_time(e.self_device_time_total),
                    _format_percent(e.self_device_time_total / self_device_total if self_device_total else 0),
                    _format_time(e.device_time_total),
                    _format_time(e.device_time_total / max(e.count, 1))]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if use_device:
                row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        row.append(str(e.count))
        if has_shapes:
            row.append(trunc(e.input_shapes, shapes_w))
        out.append(fmt.format(*row))
    out.append(sep)
    out.append(f"Self CPU time total: {_format_time(self_cpu_total)}")
    if use_device:
        out.append(f"Self CUDA time total: {_format_time(self_device_total)}")
    return "\n".join(out) + "\n"


def _build_events(raw, profile_memory, kernels=()):
    """FunctionEvents (ops, scopes, backward nodes) and the trace events from the C++ records.
    `kernels` are the CUDA backend's timed ranges (correlation, device, stream, start_ns,
    end_ns): each becomes a kernel of the op with that correlation, whose device time it is
    (self), and part of every enclosing scope's device time."""
    events, by_id, memory = [], {}, []
    for (name, kind, tid, start, end, corr, parent, _depth, shapes, dtypes, salloc, sfree,
         mbytes, total) in raw:
        if kind == _KIND_MEMORY:
            memory.append((name, tid, start, parent, mbytes, total, dtypes[0] if dtypes else "cpu"))
            continue
        ev = FunctionEvent(corr, name, tid, start / 1e3, end / 1e3, kind, parent,
                           [list(s) for s in shapes], list(dtypes), salloc, sfree)
        events.append(ev)
        by_id[corr] = ev
    for ev in events:
        p = by_id.get(ev.parent_id)
        if p is not None:
            ev.cpu_parent = p
            p.cpu_children.append(ev)
    for corr, dev, stream, start, end in kernels:
        ev = by_id.get(corr)
        if ev is None:
            continue
        dur = max(end - start, 0) / 1e3
        ev.kernels.append(_Kernel(ev.name, dev, stream, start / 1e3, dur))
        ev.self_device_time_total += dur
        ev.device_time_total += dur
        for a in _ancestors(ev):
            a.device_time_total += dur
    # Inclusive memory: self plus the children's, innermost first.
    for ev in sorted(events, key=lambda e: -len(_ancestors(e))):
        ev.cpu_memory_usage += ev.self_cpu_memory_usage
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_memory_usage += ev.cpu_memory_usage
    events.sort(key=lambda e: (e.time_range_start, len(_ancestors(e))))
    return events, memory


class _Kernel:
    """One timed CUDA range of an op: its kernels on one stream, in host-clock microseconds."""

    def __init__(self, name, device, stream, start_us, dur_us):
        self.name, self.device, self.stream = name, device, stream
        self.time_range_start, self.duration = start_us, dur_us


def _ancestors(ev):
    out, p = [], ev.cpu_parent
    while p is not None:
        out.append(p)
        p = p.cpu_parent
    return out


_GPU_PID_BASE = 1 << 24  # trace process ids of the GPUs (never a real pid)


def _chrome_trace(events, memory, pid):
    trace = []
    for ev in events:
        cat = {_KIND_USER: "user_annotation", _KIND_BACKWARD: "cpu_op"}.get(ev.kind, "cpu_op")
        args = {"External id": ev.id, "Ev Idx": len(trace)}
        if ev.input_shapes:
            args["Input Dims"] = ev.input_shapes
            args["Input type"] = ev.input_types
        trace.append({"ph": "X", "cat": cat, "name": ev.name, "pid": pid, "tid": ev.thread,
                      "ts": ev.time_range_start, "dur": ev.cpu_time_total, "args": args})
    for name, tid, start, _parent, nbytes, total, dev in memory:
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": name, "pid": pid,
                      "tid": tid, "ts": start / 1e3,
                      "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": nbytes,
                               "Device Type": 0 if dev == "cpu" else 1,
                               "Device Id": -1 if dev == "cpu" else 0}})
    # CUDA kernels on their streams (one process per device, one thread per stream), each
    # with a flow arrow from the op that launched it (PyTorch's "ac2g" flows).
    streams = {}
    for ev in events:
        for k in ev.kernels:
            gpid = _GPU_PID_BASE + k.device
            stid = streams.setdefault((k.device, k.stream), len(streams) + 1)
            trace.append({"ph": "X", "cat": "kernel", "name": k.name, "pid": gpid, "tid": stid,
                          "ts": k.time_range_start, "dur": k.duration,
                          "args": {"External id": ev.id, "device": k.device,
                                   "stream": k.stream, "correlation": ev.id}})
            trace.append({"ph": "s", "id": ev.id, "pid": pid, "tid": ev.thread,
                          "ts": ev.time_range_start, "cat": "ac2g", "name": "ac2g"})
            trace.append({"ph": "f", "id": ev.id, "pid": gpid, "tid": stid,
                          "ts": k.time_range_start, "cat": "ac2g", "name": "ac2g", "bp": "e"})
    for (dev, stream), stid in streams.items():
        trace.append({"ph": "M", "name": "thread_name", "pid": _GPU_PID_BASE + dev, "tid": stid,
                      "args": {"name": f"stream {stream:#x}" if stream else "stream 0 (default)"}})
    for dev in sorted({d for d, _ in streams}):
        trace.append({"ph": "M", "name": "process_name", "pid": _GPU_PID_BASE + dev, "tid": 0,
                      "args": {"name": f"GPU {dev}"}})
    for tid in sorted({ev.thread for ev in events}):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                      "args": {"name": f"thread {tid}"}})
    trace.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                  "args": {"name": "python"}})
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": trace,
            "displayTimeUnit": "ms", "traceName": "ember"}


def _write_trace(trace, path):
    path = os.fspath(path)
    data = json.dumps(trace)
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(data)
    else:
        with open(path, "w") as f:
            f.write(data)


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready callback writing ``<dir>/<worker>.<ms>.pt.trace.json[.gz]``, the layout
    TensorBoard's profiler plugin reads."""

    def handler_fn(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


# ------------------------------------------------------------------ profile

class profile:
    """Context manager/object recording ember ops (see torch.profiler.profile)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None):
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity values, got {a!r}")
        if not acts:
            raise AssertionError("No valid profiler activities found")
        if ProfilerActivity.CUDA in acts and ProfilerActivity.CUDA not in supported_activities():
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
            acts.discard(ProfilerActivity.CUDA)
        self.activities = acts
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._collecting = False
        self._step_handle = 0
        self._events = None
        self._memory = []
        self._started = False

    # -- collection
    def _gpu(self):
        """The CUDA backend when CUDA activity is profiled (Note [Profiler device ranges])."""
        if ProfilerActivity.CUDA not in self.activities:
            return None
        from .. import cuda
        return cuda._backend

    def _start_collect(self):
        if not self._collecting:
            gpu = self._gpu()
            if gpu is not None:
                gpu._profiler_gpu_start()
            _C._profiler_start(self.record_shapes, self.profile_memory, gpu is not None)
            self._collecting = True

    def _stop_collect(self, keep):
        if not self._collecting:
            return
        self._close_step()
        raw = _C._profiler_stop()
        gpu = self._gpu()
        kernels = gpu._profiler_gpu_collect() if gpu is not None else []
        self._collecting = False
        if keep:
            evs, mem = _build_events(raw, self.profile_memory, kernels)
            if self.acc_events and self._events is not None:
                evs = list(self._events) + evs
                mem = self._memory + mem
            self._events = EventList(evs, profile_memory=self.profile_memory,
                                     with_shapes=self.record_shapes,
                                     use_device=ProfilerActivity.CUDA in self.activities)
            self._memory = mem

    def _open_step(self):
        if self.record_steps and self._collecting and not self._step_handle:
            self._step_handle = _C._record_function_enter(f"ProfilerStep#{self.step_num}")

    def _close_step(self):
        if self._step_handle:
            _C._record_function_exit(self._step_handle)
            self._step_handle = 0

    def _enter_action(self, prev, cur):
        A = ProfilerAction
        recording = (A.WARMUP, A.RECORD, A.RECORD_AND_SAVE)
        if prev == A.RECORD_AND_SAVE or (prev == A.RECORD and cur in (A.NONE, A.WARMUP)):
            self._stop_collect(keep=True)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        elif prev == A.WARMUP and cur in (A.RECORD, A.RECORD_AND_SAVE):
            self._close_step()
            _C._profiler_drain()  # the warm-up steps are discarded
            if self._gpu() is not None:
                self._gpu()._profiler_gpu_collect()
        elif prev == A.WARMUP and cur == A.NONE:
            self._stop_collect(keep=False)
        if cur in recording:
            self._start_collect()
            self._open_step()

    def start(self):
        if self._started:
            raise RuntimeError("profile.start(): this profiler was already started")
        self._started = True
        self._enter_action(ProfilerAction.NONE, self.current_action)

    def stop(self):
        if not self._started:
            return
        self._started = False
        A = ProfilerAction
        if self.current_action in (A.RECORD, A.RECORD_AND_SAVE):
            self._stop_collect(keep=True)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        else:
            self._stop_collect(keep=False)

    def step(self):
        """Marks the end of a training step: advances the schedule."""
        if not self._started:
            self.step_num += 1
            return
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._enter_action(prev, self.current_action)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results
    def events(self):
        if self._events is None:
            raise AssertionError("profile.events(): no results yet (nothing was recorded, or the "
                                 "profiler is still collecting)")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) requires "
                               "profile(record_shapes=True)")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        _write_trace(_chrome_trace(self.events(), self._memory, os.getpid()), path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise RuntimeError("export_stacks: ember's profiler records no Python stacks "
                           "(with_stack is accepted and ignored)")

    @property
    def profiler(self):
        return self

    @property
    def function_events(self):
        return self.events()

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)
