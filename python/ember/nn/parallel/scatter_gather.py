"""scatter / gather of nested inputs and outputs across devices (differentiable: the copies
between devices are recorded by autograd, so gradients flow back to the source)."""
import ember

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _device(d):
    """A device with its index ("cuda" is the current GPU, an int a GPU index)."""
    if isinstance(d, int):
        return ember.device("cuda", d)
    d = d if isinstance(d, ember.device) else ember.device(d)
    if d.type == "cuda" and d.index is None:
        return ember.device("cuda", ember.cuda.current_device())
    return d


def scatter(inputs, target_gpus, dim=0):
    """Splits each tensor of ``inputs`` into len(target_gpus) chunks along ``dim``, one per
    device; other objects are repeated. Returns one tuple of inputs per device."""
    devices = [_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, ember.Tensor):
            chunks = obj.chunk(len(devices), dim)
            return [c.to(d) for c, d in zip(chunks, devices)]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # noqa: F841 - break the closure's reference cycle


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """scatter for (args, kwargs): both padded to the same number of replicas."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Concatenates the replicas' outputs along ``dim`` on ``target_device`` (nested
    structures are gathered element by element)."""
    device = ember.device("cpu") if target_device == -1 else _device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, ember.Tensor):
            if out.dim() == 0:
                return ember.stack([o.to(device) for o in outs])
            return ember.cat([o.to(device) for o in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        return type(out)(map(gather_map, zip(*outs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None  # noqa: F841
