"""DataParallel: one process, one replica per device, the batch split among them (threads).
Without several devices it runs the module as is; ember.nn.parallel.DistributedDataParallel
is the recommended way to train on several devices or machines."""
import ember

from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import _device, gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _default_device_ids():
    n = ember.cuda.device_count() if ember.cuda.is_available() else 0
    return list(range(n))


def _check_module_device(module, src):
    for t in list(module.parameters()) + list(module.buffers()):
        if _device(t.device) != src:
            raise RuntimeError(f"module must have its parameters and buffers on device {src} "
                               f"(device_ids[0]) but found one of them on device: {t.device}")


class DataParallel(Module):
    """Splits each input batch along ``dim`` across ``device_ids`` (default: every GPU), runs a
    replica of ``module`` on each chunk in its own thread and gathers the outputs on
    ``output_device``. Gradients of all replicas accumulate into ``module``'s parameters. With
    no GPU, or a single device, the module runs directly."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        if device_ids is None:
            device_ids = _default_device_ids()
        if not device_ids:
            self.device_ids = []
            self.output_device = None
            self.src_device_obj = None
            return
        self.device_ids = [_device(d) for d in device_ids]
        self.output_device = _device(output_device if output_device is not None else device_ids[0])
        self.src_device_obj = self.device_ids[0]
        _check_module_device(module, self.src_device_obj) if len(self.device_ids) > 1 else None
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module, self.src_device_obj)
        inputs, kwargs = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not kwargs:
            inputs, kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **kwargs[0])
        replicas = replicate(self.module, self.device_ids[:len(inputs)], not ember.is_grad_enabled())
        outputs = parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])
        return gather(outputs, self.output_device, self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """DataParallel's forward as a function: ``module(inputs)`` with the batch split across
    ``device_ids``, the outputs gathered on ``output_device``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if device_ids is None:
        device_ids = _default_device_ids()
    if not device_ids:
        return module(*inputs, **(module_kwargs or {}))
    devices = [_device(d) for d in device_ids]
    out_dev = _device(output_device if output_device is not None else device_ids[0])
    _check_module_device(module, devices[0])
    inputs, kwargs = scatter_kwargs(inputs, module_kwargs or {}, devices, dim)
    if not inputs and not kwargs:
        inputs, kwargs = ((),), ({},)
    if len(devices) == 1:
        return gather([module(*inputs[0], **kwargs[0])], out_dev, dim)
    used = devices[:len(inputs)]
    replicas = replicate(module, used, not ember.is_grad_enabled())
    outputs = parallel_apply(replicas, inputs, kwargs, used)
    return gather(outputs, out_dev, dim)
