"""CUDA streams and events (see torch.cuda.Stream / torch.cuda.Event).

Without a GPU every constructor and query raises the RuntimeError of
``ember.cuda._lazy_init`` (no driver/device, or a CPU-only build); ``stream(None)``
is a no-op context, as in PyTorch.
"""
from __future__ import annotations


def _b():
    from . import _lazy_init
    _lazy_init()
    from . import _backend
    return _backend


class Stream:
    """A CUDA stream: an ordered queue of device work. ``Stream()`` makes a new one on the
    current device; ``priority`` < 0 is higher priority."""

    def __init__(self, device=None, priority=0, *, stream_ptr=None, _handle=None):
        from . import _device_index
        b = _b()
        self.device_index = _device_index(device)
        if _handle is not None:
            self.cuda_stream = _handle
        elif stream_ptr is not None:
            self.cuda_stream = int(stream_ptr)
        else:
            self.cuda_stream = b.stream_create(self.device_index, int(priority))
        self._b = b

    @property
    def device(self):
        from .. import device
        return device("cuda", self.device_index)

    @property
    def priority(self):
        return self._b.stream_priority(self.cuda_stream)

    def wait_event(self, event):
        """Makes future work on this stream wait for ``event``."""
        self._b.stream_wait_event(self.cuda_stream, event._ensure())

    def wait_stream(self, stream):
        """Makes future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return bool(self._b.stream_query(self.cuda_stream))

    def synchronize(self) -> None:
        self._b.stream_synchronize(self.cuda_stream)

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.cuda_stream, self.device_index) == (
            other.cuda_stream, other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """Wraps a cudaStream_t made elsewhere (not owned)."""

    def __init__(self, stream_ptr, device=None):
        super().__init__(device, stream_ptr=stream_ptr)


class Event:
    """A CUDA event: a marker in a stream, for synchronization and timing."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise RuntimeError("Event(interprocess=True): interprocess events are not supported by ember")
        self._b = _b()
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.cuda_event = 0  # created lazily on first record, as in PyTorch

    def _ensure(self):
        if not self.cuda_event:
            self.cuda_event = self._b.event_create(self.enable_timing, self.blocking)
        return self.cuda_event

    def record(self, stream=None):
        if stream is None:
            stream = current_stream()
        self._b.event_record(self._ensure(), stream.cuda_stream)

    def wait(self, stream=None):
        if stream is None:
            stream = current_stream()
        stream.wait_event(self)

    def query(self) -> bool:
        return True if not self.cuda_event else bool(self._b.event_query(self.cuda_event))

    def synchronize(self) -> None:
        if self.cuda_event:
            self._b.event_synchronize(self.cuda_event)

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, enable_timing=True)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self.cuda_event and end_event.cuda_event):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return self._b.event_elapsed_time(self.cuda_event, end_event.cuda_event)

    def __del__(self):
        if getattr(self, "cuda_event", 0):
            try:
                self._b.event_destroy(self.cuda_event)
            except Exception:
                pass

    def __repr__(self):
        return f"<ember.cuda.Event {self.cuda_event:#x}>" if self.cuda_event else "<ember.cuda.Event uninitialized>"


def current_stream(device=None) -> Stream:
    from . import _device_index
    b = _b()
    idx = _device_index(device)
    return Stream(idx, _handle=b.current_stream(idx))


def default_stream(device=None) -> Stream:
    from . import _device_index
    _b()
    return Stream(_device_index(device), _handle=0)


def set_stream(stream: Stream) -> None:
    if stream is None:
        return
    _b().set_current_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """Makes ``stream`` current (on its device) inside the block; ``None`` is a no-op."""

    def __init__(self, stream):
        self.stream = stream
        self.prev = None

    def __enter__(self):
        if self.stream is None:
            return None
        self.prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self.prev)
        return False


def stream(stream) -> StreamContext:
    return StreamContext(stream)
