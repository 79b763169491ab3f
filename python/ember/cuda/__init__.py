"""ember.cuda: device queries and the lazily loaded CUDA backend.

The backend (ember._C_cuda) is imported on first use, so ``import ember`` never
needs a GPU or a driver. A CUDA tensor op without a usable backend raises a
RuntimeError saying why (CPU-only build, or no GPU/driver).
"""
_backend = None
_load_error = None


# ---- cuDNN from PyTorch's wheels (Note [cuDNN at run time] in backends/cuda/conv.cu) ----
def _preload_cudnn():
    """Loads libcudnn.so.9 of the nvidia-cudnn pip package, when it is installed, with
    RTLD_GLOBAL, so that _C_cuda's dlopen("libcudnn.so.9") finds it; silently does nothing
    otherwise (convolutions then use a system libcudnn, or im2col + cuBLAS)."""
    try:
        import ctypes
        import importlib.util
        import os

        spec = importlib.util.find_spec("nvidia.cudnn")
        for root in (spec.submodule_search_locations or ()) if spec else ():
            path = os.path.join(root, "lib", "libcudnn.so.9")
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return
    except Exception:  # noqa: BLE001 - optional: any failure leaves cuDNN to the system
        pass
# ---- end of the cuDNN preload ----


def _preload_nccl():
    """Loads libnccl.so.2 of the nvidia-nccl pip package (RTLD_GLOBAL) when it is installed,
    so that the nccl backend's dlopen finds it (Note [NCCL at run time] in
    csrc/ember/distributed/nccl/process_group_nccl.cpp); otherwise NCCL comes from the system."""
    try:
        import ctypes
        import importlib.util
        import os

        spec = importlib.util.find_spec("nvidia.nccl")
        for root in (spec.submodule_search_locations or ()) if spec else ():
            path = os.path.join(root, "lib", "libnccl.so.2")
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return
    except Exception:  # noqa: BLE001 - optional, as the cuDNN preload
        pass


def _lazy():
    global _backend, _load_error
    if _backend is None and _load_error is None:
        _preload_cudnn()
        _preload_nccl()
        try:
            from .. import _C_cuda
            _backend = _C_cuda
        except ImportError as e:  # CPU-only build
            _load_error = e
    return _backend


class OutOfMemoryError(RuntimeError):
    """Raised when the CUDA caching allocator cannot satisfy a request (after freeing its cache)."""


class CudaError(RuntimeError):
    pass


def is_initialized() -> bool:
    """True once the backend is loaded and a GPU is present."""
    return is_available()


def init() -> None:
    _lazy_init()


def _lazy_init():
    """Makes the CUDA backend usable or raises RuntimeError explaining why not."""
    b = _lazy()
    if b is None:
        raise RuntimeError("ember was built without CUDA (no nvcc was found at build time, or "
                           "EMBER_CUDA=OFF); rebuild with the CUDA toolkit installed to use "
                           "device='cuda'")
    if b.device_count() == 0:
        raise RuntimeError("Found no NVIDIA driver on your system, or no CUDA device is visible: "
                           "ember.cuda.is_available() is False. Use device='cpu'.")


def is_available() -> bool:
    """True when ember was built with CUDA and a GPU and driver are present."""
    b = _lazy()
    return bool(b is not None and b.device_count() > 0)


def device_count() -> int:
    b = _lazy()
    return b.device_count() if b is not None else 0


def current_device() -> int:
    _lazy_init()
    return _backend.current_device()


def _device_index(device, optional=True) -> int:
    """A CUDA device index from an int, a 'cuda:N' string, an ember.device or None (current)."""
    _lazy_init()
    if device is None:
        return current_device() if optional else 0
    if isinstance(device, str):
        from .. import device as _dev
        device = _dev(device)
    if isinstance(device, int):
        idx = device
    elif hasattr(device, "type") and hasattr(device, "index"):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        idx = device.index if device.index is not None else (current_device() if optional else 0)
    else:
        raise TypeError(f"Invalid device argument {device!r}: expected int, str or ember.device")
    if idx < 0:
        return current_device()
    n = device_count()
    if idx >= n:
        raise RuntimeError(f"Invalid device ordinal {idx}: {n} CUDA device(s) visible "
                           "(CUDA error: invalid device ordinal)")
    return idx


def set_device(device) -> None:
    _lazy_init()
    _backend.set_device(_device_index(device))


def get_device_name(device=None) -> str:
    _lazy_init()
    return _backend.get_device_name(_device_index(device))


class _DeviceProperties:
    def __init__(self, d):
        self.__dict__.update(d)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    _lazy_init()
    return _DeviceProperties(_backend.get_device_properties(_device_index(device)))


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device=None) -> None:
    _lazy_init()
    with _DeviceGuard(device):
        _backend.synchronize()


class _DeviceGuard:
    def __init__(self, device):
        self.idx = None if device is None else _device_index(device)
        self.prev = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device()
            if self.prev != self.idx:
                _backend.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None and self.prev != self.idx:
            _backend.set_device(self.prev)
        return False


class device:
    """Context manager selecting the current CUDA device (``None`` or -1: no-op)."""

    def __init__(self, device):
        self.idx = -1 if device is None else (device if isinstance(device, int) else None)
        self._device = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx == -1:
            return self
        idx = _device_index(self._device)
        self.prev_idx = current_device()
        if idx != self.prev_idx:
            _backend.set_device(idx)
        self.idx = idx
        return self

    def __exit__(self, *exc):
        if self.idx != -1 and self.prev_idx != self.idx:
            _backend.set_device(self.prev_idx)
        return False


class device_of(device):
    """The device of a tensor as a context (no-op for CPU tensors)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)




def manual_seed(seed: int) -> None:
    """Seeds the generator CUDA ops use (ember's CUDA ops draw from the default generator)."""
    from .. import _C
    _C.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


from . import amp  # noqa: E402,F401
from .memory import (  # noqa: E402,F401
    _dump_snapshot,
    _record_memory_history,
    _snapshot,
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .streams import (  # noqa: E402,F401  # noqa: E402,F401
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)


def _check_pin_memory(op="pin_memory"):
    """Raises the RuntimeError PyTorch raises when pinning without a CUDA driver/device."""
    b = _lazy()
    if b is None:
        raise RuntimeError(f"{op}(): Cannot access accelerator device when none is available: "
                           "pinned (page-locked) host memory needs CUDA, and ember was built "
                           "without CUDA")
    if b.device_count() == 0:
        raise RuntimeError(f"{op}(): Cannot access accelerator device when none is available: "
                           "found no NVIDIA driver on your system, or no CUDA device is visible "
                           "(ember.cuda.is_available() is False), so host memory cannot be pinned")


def _tensor_pin_memory(self, device=None):
    """A copy of this CPU tensor in pinned (page-locked) host memory (self if already pinned)."""
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    _check_pin_memory("pin_memory")
    if _backend.is_pinned(self):
        return self
    return _backend.pin_memory(self)


def _tensor_is_pinned(self, device=None):
    """True when this tensor's memory is pinned host memory (never for CUDA or without a GPU)."""
    if self.device.type != "cpu" or not is_available():
        return False
    return bool(_backend.is_pinned(self))


_TYPESTR = {"float16": "<f2", "float32": "<f4", "float64": "<f8", "bfloat16": "<V2",
            "uint8": "|u1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
            "bool": "|b1"}


def _cuda_array_interface(self):
    if not self.is_cuda:
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                             f"{self.type()} If CUDA data is required use tensor.cuda() to copy "
                             "tensor to device memory.")
    if self.requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. "
                           "If gradients aren't required, use var.detach() to get Variable that "
                           "doesn't require grad.")
    name = str(self.dtype).split(".")[-1]
    if name == "bfloat16":
        raise TypeError("__cuda_array_interface__: bfloat16 has no array-interface typestr")
    itemsize = self.element_size()
    strides = None if self.is_contiguous() else tuple(s * itemsize for s in self.stride())
    ptr = self.data_ptr() if self.numel() > 0 else 0
    return {"typestr": _TYPESTR[name], "shape": tuple(self.shape), "strides": strides,
            "data": (ptr, False), "version": 3}


def _tensor_record_stream(self, stream):  # noqa: F811 (torch's parameter name)
    """Marks this CUDA tensor's memory as in use by ``stream``: the caching allocator will not
    hand it out again until the work queued on ``stream`` when it is freed has finished."""
    if not self.is_cuda:
        raise RuntimeError(f"record_stream: expected a CUDA tensor, got one on {self.device}")
    _lazy_init()
    _backend.record_stream(self, stream.cuda_stream)


def _install_tensor_methods():
    from .. import Tensor
    Tensor.pin_memory = _tensor_pin_memory
    Tensor.is_pinned = _tensor_is_pinned
    Tensor.record_stream = _tensor_record_stream
    Tensor.__cuda_array_interface__ = property(_cuda_array_interface)


_install_tensor_methods()
