"""ember: a small PyTorch-like deep-learning framework with a C++ core."""
from __future__ import annotations

from . import _blas  # noqa: F401  (loads the BLAS before the C++ core needs it)
from . import _C
from ._C import (  # noqa: F401
    Tensor, dtype, device,
    bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    from_numpy, get_default_dtype, set_default_dtype, get_default_device, set_default_device, get_num_threads, set_num_threads,
    result_type, promote_types, can_cast,
)
from ._size import Size

_C._set_size_class(Size)

# Aliases PyTorch has for the dtypes.
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

from ._ops import *  # noqa: E402,F401,F403
from . import _tensor  # noqa: E402,F401  (Python-side Tensor methods: repr, ...)
from ._storage import strided, sparse_coo, layout  # noqa: E402,F401  (Tensor.storage(), .layout)
from . import cuda, version  # noqa: E402,F401
from . import autograd, linalg, testing  # noqa: E402,F401
from . import backends  # noqa: E402,F401  (ember.backends.cpu.get_cpu_capability)
from .autograd.grad_mode import (  # noqa: E402,F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)

from . import sparse  # noqa: E402,F401  (ember.sparse: mm, addmm, sum, softmax)
from .sparse._coo import sparse_coo_tensor  # noqa: E402,F401

# As torch: `import ember` gives ember.nn, ember.optim and ember.utils.data.
from . import nn, optim, utils  # noqa: E402,F401
import ember.utils.data  # noqa: E402,F401
from . import amp, cpu, profiler  # noqa: E402,F401  (mixed precision, op profiler)
from . import jit, onnx  # noqa: E402,F401  (trace/script/save/load, ONNX export)
from ._compile import compile  # noqa: E402,F401,A004  (ember.compile: fused kernels)
from . import _logging  # noqa: E402,F401  (EMBER_LOGS switches)
# As torch: ember.distributed, ember.futures and ember.multiprocessing come with `import ember`
# (the last registers how tensors cross process boundaries: shared memory).
from . import distributed, futures, multiprocessing  # noqa: E402,F401
from .amp.autocast_mode import (  # noqa: E402,F401
    autocast, is_autocast_enabled, get_autocast_dtype, set_autocast_enabled, set_autocast_dtype,
    is_autocast_cpu_enabled, get_autocast_cpu_dtype, get_autocast_gpu_dtype,
    is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache,
    is_autocast_available,
)

from ._settings import (  # noqa: E402,F401
    set_float32_matmul_precision, get_float32_matmul_precision, use_deterministic_algorithms,
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled,
)

# The legacy typed constructors (ember.FloatTensor(...), isinstance(t, ember.LongTensor)) and
# the device-neutral accelerator API (torch.accelerator).
from ._legacy_types import set_default_tensor_type, _install as _install_legacy_types  # noqa: E402
_install_legacy_types()  # ember.FloatTensor ... and ember.cuda.FloatTensor ...
from . import accelerator  # noqa: E402,F401
from .accelerator import get_device_module  # noqa: E402,F401

__version__ = "0.1.0"
