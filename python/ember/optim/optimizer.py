"""The Optimizer base class, with torch.optim.Optimizer's API and state_dict layout.

The optimizers derive from ``_GroupStepOptimizer``, whose step() gathers, per parameter
group, the parameters that have a gradient and their state tensors, then makes ONE fused
C++ call (``ember._C._<name>_step_``) that updates the whole group with the GIL released
(see Note [Fused optimizer steps] in csrc/ember/kernels/stubs/optim.h). With
``differentiable=True`` the same update runs instead as ember tensor ops under autograd
(one composite per algorithm, a loop over the parameters as PyTorch's foreach=False), so
a graph through ``optimizer.step()`` exists, as PyTorch's.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import ember

from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


class _RequiredParameter:
    """Singleton marking a hyper-parameter that every group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook):
    """Registers ``hook(optimizer, args, kwargs)`` to run before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Registers ``hook(optimizer, args, kwargs)`` to run after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _typename(obj):
    if isinstance(obj, ember.Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__ if type(obj).__module__ not in (
        "builtins", "__main__") else type(obj).__qualname__


def _to_scalar(x):
    """A hyper-parameter as a Python float (a one-element Tensor is read)."""
    return x.item() if isinstance(x, ember.Tensor) else x


def _scalar_dtype():
    return ember.float64 if ember.get_default_dtype() == ember.float64 else ember.float32


def _new_step():
    """state['step'] as PyTorch keeps it: a 0-d float32 (float64 under that default) tensor."""
    return ember.zeros((), dtype=_scalar_dtype())


def _use_grad(step):
    """Runs step() under no_grad, or with grad mode on when ``differentiable=True`` (as
    PyTorch's ``torch.set_grad_enabled(self.defaults['differentiable'])``)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with ember.set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)

    return wrapper


def _advance_step(step_t):
    """state['step'] += 1 (no history) and the new count as a Python float."""
    with ember.no_grad():
        step_t.add_(1)
    return float(step_t.item())


def _lerp(start, end, weight):
    """start + weight * (end - start) in recorded ops (exact at weight 0 and 1 like lerp)."""
    return ember.lerp(start, end, weight)


def _check_fused_foreach(defaults):
    if defaults.get("fused"):
        if defaults.get("differentiable"):
            raise RuntimeError("`fused` does not support `differentiable`")
        if defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_lr(lr):
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts
            defining parameter groups.
        defaults: default values of the optimization options.
    """

    #: state keys holding scalar tensors that load_state_dict leaves as they are
    #: (PyTorch keeps 'step' on the CPU in its own dtype)
    _scalar_state_keys = ("step",)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, ember.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + _typename(params)
            )
        if isinstance(params, set):
            warnings.warn(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead. This will be an error in a future release.",
                FutureWarning,
                stacklevel=2,
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ---- pickling -------------------------------------------------------------------------

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---- step hooks -----------------------------------------------------------------------

    @staticmethod
    def profile_hook_step(func):
        """Wraps a step function with the global and per-optimizer step hooks."""

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self, *_ = args
            for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                  self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            f"{func} must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result}."
                        )
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                   _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        return wrapper

    def _patch_step_function(self):
        hooked = getattr(self.__class__.step, "hooked", None)
        if not hooked:
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before step()."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None`` after step()."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register(self, hooks, hook, prepend):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state_dict -----------------------------------------------------------------------

    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``,
        PyTorch's layout: parameters are numbered in group order, state tensors are the
        optimizer's own (not copies)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, ember.Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _cast_state(self, param, value, key=None):
        """A loaded state value for `param`: tensors move to its dtype (when floating) and
        device, scalar state such as 'step' is kept as it is."""
        if isinstance(value, ember.Tensor):
            if key in self._scalar_state_keys:
                return value
            if param.is_floating_point():
                return value.to(dtype=param.dtype, device=param.device)
            return value.to(device=param.device)
        if isinstance(value, dict):
            return {k: self._cast_state(param, v, key=k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict):
        """Loads a dict made by state_dict() (of this optimizer class, ember's or PyTorch's
        once its tensors are ember tensors)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def _tensor_steps(self, *keys):
        """Turns float scalar state (an old-style 'step') into PyTorch's 0-d tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p)
                if not st:
                    continue
                for key in keys:
                    if key in st and not isinstance(st[key], ember.Tensor):
                        st[key] = ember.tensor(float(st[key]), dtype=_scalar_dtype())

    # ---- gradients ------------------------------------------------------------------------

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure=None):
        """Performs one optimization step (implemented by each optimizer)."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Adds a parameter group (a dict with "params" and per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")

        for param in param_group["params"]:
            if not isinstance(param, ember.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not seen.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


class _GroupStepOptimizer(Optimizer):
    """The step() shared by the optimizers with a fused C++ step.

    A subclass names its per-parameter state (``_state_keys(group)``, in the order its
    fused call takes the lists), creates it (``_init_state(group, p, state)``), and gives
    the two update paths over one group's lists: ``_fused_step`` (one C++ call) and
    ``_composite_step`` (ember ops under autograd, for ``differentiable=True``). Both get
    ``(group, params, grads, *state_lists)``; a state entry that is missing is None.
    """

    def _state_keys(self, group):
        raise NotImplementedError

    def _init_state(self, group, p, state):
        raise NotImplementedError

    def _fused_step(self, group, params, grads, *state_lists):
        raise NotImplementedError

    def _composite_step(self, group, params, grads, *state_lists):
        raise NotImplementedError

    def _sparse_step(self, group, params, grads, *state_lists):
        """The update for parameters whose gradient is a sparse COO tensor (Embedding with
        sparse=True): PyTorch's per-tensor algorithm in ember ops, for the optimizers that
        accept sparse gradients (SGD, Adagrad); the others raise as PyTorch's."""
        hint = ", please consider SparseAdam instead" if type(self).__name__ == "Adam" else ""
        raise RuntimeError(f"{type(self).__name__} does not support sparse gradients{hint}")

    def _gather(self, group):
        keys = self._state_keys(group)
        params, grads, lists = [], [], [[] for _ in keys]
        for p in group["params"]:
            if p.grad is None:
                continue
            st = self.state[p]
            if len(st) == 0:
                self._init_state(group, p, st)
            params.append(p)
            grads.append(p.grad)
            for lst, key in zip(lists, keys):
                lst.append(st.get(key))
        return params, grads, lists

    @_use_grad
    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, lists = self._gather(group)
            if not params:
                continue
            if any(g.is_sparse for g in grads):
                sparse = [i for i, g in enumerate(grads) if g.is_sparse]
                dense = [i for i, g in enumerate(grads) if not g.is_sparse]
                self._sparse_step(group, [params[i] for i in sparse], [grads[i] for i in sparse],
                                  *[[lst[i] for i in sparse] for lst in lists])
                params, grads = [params[i] for i in dense], [grads[i] for i in dense]
                lists = [[lst[i] for i in dense] for lst in lists]
                if not params:
                    continue
            if group.get("differentiable", False):
                self._composite_step(group, params, grads, *lists)
            else:
                self._fused_step(group, params, grads, *lists)
        return loss


def _closure_loss(closure):
    """Calls a step closure with gradients enabled (step() itself runs under no_grad)."""
    if closure is None:
        return None
    with ember.enable_grad():
        return closure()

