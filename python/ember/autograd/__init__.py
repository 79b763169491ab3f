"""ember.autograd: reverse-mode automatic differentiation (the engine is C++)."""
from .. import _C
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from .function import Function, FunctionCtx  # noqa: F401
from .grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)


def _tensor_seq(x, what):
    if isinstance(x, _C.Tensor):
        return (x,)
    if x is None:
        return None
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, not {type(x).__name__}") from None


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    tensors = _tensor_seq(tensors, "tensors")
    if grad_tensors is not None:
        grad_tensors = _tensor_seq(grad_tensors, "grad_tensors")
    if inputs is not None:
        inputs = _tensor_seq(inputs, "inputs")
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if retain_graph is None:
        retain_graph = create_graph
    _C._autograd_backward(list(tensors), None if grad_tensors is None else list(grad_tensors),
                          bool(retain_graph), bool(create_graph),
                          None if inputs is None else list(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=False, is_grads_batched=False):
    """Returns the gradients of ``outputs`` with respect to ``inputs`` (no ``.grad`` is touched)."""
    outputs = _tensor_seq(outputs, "outputs")
    inputs = _tensor_seq(inputs, "inputs")
    if grad_outputs is not None:
        grad_outputs = _tensor_seq(grad_outputs, "grad_outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, bool(retain_graph), bool(create_graph),
                             bool(allow_unused))
    return _C._autograd_grad(list(outputs), list(inputs),
                             None if grad_outputs is None else list(grad_outputs),
                             bool(retain_graph), bool(create_graph), bool(allow_unused))


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """grad(is_grads_batched=True): the first dimension of every grad_output indexes a batch of
    vector-Jacobian products, one backward pass each over the same graph; the results are
    stacked along a new first dimension (PyTorch vectorizes this with vmap)."""
    if grad_outputs is None:
        raise RuntimeError("grad(): is_grads_batched=True requires grad_outputs with a leading "
                           "batch dimension")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs for {len(outputs)} outputs")
    sizes = {g.shape[0] if g.dim() else None for g in grad_outputs}
    if None in sizes or len(sizes) != 1:
        raise RuntimeError("grad(is_grads_batched=True): every grad_output needs the same leading "
                           f"batch dimension, got shapes {[tuple(g.shape) for g in grad_outputs]}")
    (batch,) = sizes
    per_input = [[] for _ in inputs]
    for b in range(batch):
        last = b == batch - 1
        gs = _C._autograd_grad(list(outputs), list(inputs), [g[b] for g in grad_outputs],
                               retain_graph or not last, create_graph, allow_unused)
        for slot, g in enumerate(gs):
            per_input[slot].append(g)
    result = []
    for slot, gs in enumerate(per_input):
        if all(g is None for g in gs):
            result.append(None)
            continue
        zero = next(g for g in gs if g is not None)
        result.append(_C.stack([g if g is not None else zero.new_zeros(zero.shape) for g in gs])
                      if batch else inputs[slot].new_zeros((0,) + tuple(inputs[slot].shape)))
    return tuple(result)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradient of this tensor w.r.t. the graph leaves (see ember.autograd.backward)."""
    backward(self, None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


_C.Tensor.backward = _tensor_backward

from . import functional, graph  # noqa: E402,F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
