"""Hook handles and the module backward-hook machinery, as torch.utils.hooks."""
from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict

from .. import _C

__all__ = ["RemovableHandle", "BackwardHook"]


class RemovableHandle:
    """A handle that removes a hook from its dict(s) when ``remove()`` is called
    (also usable as a context manager)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra_dict = ref()
            if extra_dict is not None and self.id in extra_dict:
                del extra_dict[self.id]

    def __getstate__(self):
        if self.extra_dict_ref is None:
            return (self.hooks_dict_ref(), self.id)
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        if state[0] is None:
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        if len(state) < 3 or state[2] is None:
            self.extra_dict_ref = ()
        else:
            self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2])

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def _pack_with_none(indices, values, size):
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


def _unpack_none(indices, values):
    return tuple(values[idx] for idx in indices)


def _hook_function():
    # Imported lazily: autograd.Function is defined after this module may be imported.
    from ..autograd import Function

    class BackwardHookFunction(Function):
        """Identity on its tensors; its backward runs the module's hook callback with all
        the gradients flowing through at once (torch's BackwardHookFunction plus the
        grad_fn hooks it carries, in one place)."""

        @staticmethod
        def forward(ctx, callback, materialize, *args):
            ctx.callback = callback
            # The input side sees zeros for gradients that did not arrive (as the hooks on
            # torch's node do, after materialization); the output side sees None.
            ctx.zeros_for = [(a.shape, a.dtype, a.device) for a in args] if materialize else None
            # New views (not the inputs themselves), so the ones whose input needs no grad
            # can be marked non-differentiable: no gradient flows into them, as in torch.
            outs = tuple(a.view_as(a) for a in args)
            ctx.mark_non_differentiable(*[o for o, a in zip(outs, args) if not a.requires_grad])
            ctx.set_materialize_grads(False)
            return outs

        @staticmethod
        def backward(ctx, *grads):
            if ctx.zeros_for is not None:
                grads = tuple(_C.zeros(shape, dtype=dtype, device=device) if g is None else g
                              for g, (shape, dtype, device) in zip(grads, ctx.zeros_for))
            return (None, None) + tuple(ctx.callback(grads))

    return BackwardHookFunction


_BackwardHookFunction = None


def _apply_hook_function(callback, materialize, tensors):
    global _BackwardHookFunction
    if _BackwardHookFunction is None:
        _BackwardHookFunction = _hook_function()
    out = _BackwardHookFunction.apply(callback, materialize, *tensors)
    return out if isinstance(out, tuple) else (out,)


class BackwardHook:
    """Runs a module's full backward hooks and backward pre-hooks.

    ``setup_input_hook`` wraps the forward inputs and ``setup_output_hook`` the outputs in
    an identity autograd Function. The output side's backward sees grad_output first (it
    runs the pre-hooks and stores it); the input side's backward then sees grad_input and
    calls the hooks with ``(module, grad_input, grad_output)``. When no input needs a
    gradient, the output side calls the hooks with grad_input all None, as torch does.
    """

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _input_callback(self, grad_input):
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs.
            return grad_input
        res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return _unpack_none(self.input_tensors_index, res)

    def _output_callback(self, grad_output):
        self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue
                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {actual_len}, but expected {expected_len}")
                self.grad_outputs = hook_grad_outputs
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                          "outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=6)
            grad_inputs = _pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                       "always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def _apply_on_tensors(self, callback, args, materialize):
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, _C.Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and _C.is_grad_enabled()):
            return args, None
        new_tensors = _apply_hook_function(callback, materialize, tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        if type(args) is tuple:
            out = tuple(arg_list)
        else:
            out = type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(self._input_callback, args, True)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False
        res, output_idx = self._apply_on_tensors(self._output_callback, args, False)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        if not is_tuple:
            res = res[0]
        return res
