"""DistributedDataParallel: one model replica per process, gradients averaged across processes
while backward runs. The bucketing, the autograd hooks and the overlap of communication with
backward are the C++ reducer's (Note [DDP reducer] in csrc/ember/distributed/reducer.cpp);
this module wires it to a Module as PyTorch's DDP does."""
import inspect
from contextlib import contextmanager

import ember
import ember.distributed as dist
from ember.distributed.algorithms.join import Join, Joinable, JoinHook

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024


def _find_tensors(obj):
    """Every tensor in a (nested) forward output."""
    if isinstance(obj, ember.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    if hasattr(obj, "__dataclass_fields__"):
        return [t for f in obj.__dataclass_fields__ for t in _find_tensors(getattr(obj, f))]
    return []


def _to_device(obj, device):
    if isinstance(obj, ember.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


class _DDPJoinHook(JoinHook):
    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        # The collectives of one training iteration of the other ranks, in their order.
        ddp = self.ddp
        ddp.reducer._rebuild_buckets()
        ddp._check_and_sync_module_buffers()
        should_sync = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync
        if not should_sync:
            return
        ddp.reducer._run_join_shadow()
        ddp.reducer._push_all_rebuilt_params()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across processes: wrap the model once per process (after
    init_process_group); each process feeds its own shard of the data and, after backward,
    every replica holds the same averaged gradients (so the same parameters after the
    optimizer step).

    ``find_unused_parameters``: allow forward passes that leave parameters out of the loss.
    ``no_sync()``: accumulate gradients locally, synchronize on the next backward outside it.
    ``gradient_as_bucket_view``: .grad tensors are views of the communication buckets (less
    memory, one copy fewer). ``static_graph``: the graph is the same every step (parameters used
    several times, e.g. activation checkpointing, are fine). ``register_comm_hook`` replaces the
    all-reduce of each bucket (see ember.distributed.algorithms.ddp_comm_hooks)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        Joinable.__init__(self)
        if process_group is None:
            process_group = dist.distributed_c10d._default_pg()
        self.process_group = process_group
        self.module = module
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        devices = {p.device for _, p in named}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same "
                             f"device type, but got parameters on {sorted(map(str, devices))}.")
        device = next(iter(devices))
        if device.type == "cpu":
            if device_ids is not None or output_device is not None:
                raise ValueError(
                    f"DistributedDataParallel device_ids and output_device arguments only work "
                    f"with single-device/multiple-device GPU modules or CPU modules, but got "
                    f"device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {devices}.")
            self.device_ids = None
            self.output_device = None
        else:
            if device_ids is not None and len(device_ids) > 1:
                raise ValueError("device_ids can only be None or contain a single element.")
            self.device_ids = [device.index] if device_ids is None else [
                ember.device(d).index if not isinstance(d, int) else d for d in device_ids]
            self.output_device = self.device_ids[0] if output_device is None else output_device
        self.device = device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None
                                     else bucket_cap_mb) * 1024 * 1024)
        # The small first bucket (communication starts early) only with the default cap; an
        # explicit bucket_cap_mb applies to every bucket, as in PyTorch.
        self._first_bucket_bytes = (dist._DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None
                                    else self.bucket_bytes_cap)
        self._params = [p for _, p in named]
        self._param_names = [n for n, _ in named]
        self.modules_buffers = list(module.buffers())
        self._verify_params_across_processes()
        if init_sync:
            self._sync_module_states(0)
        # Buckets in reverse parameter order: the last layers' gradients arrive first
        # (Note [DDP reducer]); rebuilt in arrival order after the first step.
        order = list(reversed(range(len(self._params))))
        buckets, limits = dist._compute_bucket_assignment_by_size(
            self._params, [self._first_bucket_bytes, self.bucket_bytes_cap], None, order)
        self.reducer = dist.Reducer(self._params, buckets, limits, self.process_group,
                                    self.bucket_bytes_cap, find_unused_parameters,
                                    gradient_as_bucket_view, static_graph,
                                    self._first_bucket_bytes, self._param_names)
        self.static_graph = static_graph

    # ---- construction ----

    def _verify_params_across_processes(self):
        meta = [len(self._params)] + [s for p in self._params for s in (p.dim(), *p.shape)]
        mine = ember.tensor([len(meta)], dtype=ember.int64, device=self.device)
        sizes = [ember.zeros(1, dtype=ember.int64, device=self.device)
                 for _ in range(dist.get_world_size(self.process_group))]
        dist.all_gather(sizes, mine, group=self.process_group)
        longest = max(int(s.item()) for s in sizes)
        local = ember.full((longest + 1,), -1, dtype=ember.int64)
        local[:len(meta)] = ember.tensor(meta, dtype=ember.int64)
        local = local.to(self.device)
        outs = [ember.empty_like(local) for _ in sizes]
        dist.all_gather(outs, local, group=self.process_group)
        me = dist.get_rank(self.process_group)
        for r, o in enumerate(outs):
            theirs = o.cpu().tolist()
            if theirs[0] != meta[0]:
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} has "
                                   f"{meta[0]} params, while rank {r} has inconsistent "
                                   f"{theirs[0]} params.")
            if theirs[:len(meta)] != meta:
                raise RuntimeError(f"DDP expects the same parameter shapes on all ranks, but "
                                   f"rank {r}'s differ from rank {me}'s.")

    def _sync_module_states(self, src):
        tensors = [p.detach() for p in self.module.parameters()]
        tensors += [b.detach() for b in self.modules_buffers]
        if tensors:
            with ember.no_grad():
                dist._broadcast_coalesced(self.process_group, tensors, _BROADCAST_BUCKET_BYTES, src)

    # ---- forward ----

    def forward(self, *inputs, **kwargs):
        grad_sync = ember.is_grad_enabled() and self.require_backward_grad_sync
        if self._join_config.enable:
            work = Join.notify_join_context(self)
            if work is not None:
                self.reducer._set_forward_pass_work_handle(work, self._divide_by_initial_world_size)
        if grad_sync:
            self.reducer.prepare_for_forward()
        if ember.is_grad_enabled():
            self.reducer._rebuild_buckets()
        if self._will_sync_module_buffers():
            self._sync_buffers()
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        if self.device_ids:
            inputs = _to_device(inputs, self.device)
            kwargs = _to_device(kwargs, self.device)
        output = self.module(*inputs, **kwargs)
        if grad_sync:
            self.require_forward_param_sync = True
            if self.find_unused_parameters and not self.static_graph:
                self.reducer.prepare_for_backward(_find_tensors(output))
            else:
                self.reducer.prepare_for_backward([])
        else:
            self.require_forward_param_sync = False
        return output

    def _will_sync_module_buffers(self):
        return (self.require_forward_param_sync and self.broadcast_buffers
                and len(self.modules_buffers) > 0)

    def _sync_buffers(self, src=0):
        with ember.no_grad():
            dist._broadcast_coalesced(self.process_group, [b.detach() for b in self.modules_buffers],
                                      self.bucket_bytes_cap, src)

    def _check_and_sync_module_buffers(self):
        if self._will_sync_module_buffers():
            self._sync_buffers(getattr(self, "_authoritative_rank", 0))

    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        if not is_joined_rank and self.require_backward_grad_sync:
            t = ember.ones(1, device=self.device)
        else:
            t = ember.zeros(1, device=self.device)
        work = dist.all_reduce(t, group=self.process_group, async_op=True)
        if is_joined_rank:
            work.wait()
            return t.item() != 0
        return work

    # ---- gradient synchronization control ----

    @contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first backward outside
        synchronizes the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """Replaces each bucket's all-reduce with ``hook(state, bucket) -> Future`` (the Future's
        value: the bucket's reduced buffer)."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        params = inspect.signature(hook).parameters
        if len(params) != 2:
            raise ValueError("Communication hook must take 2 arguments: (state, bucket).")
        self.reducer._register_comm_hook(state, hook)

    def _register_builtin_comm_hook(self, comm_hook_type):
        """Uses a hook built into the reducer (dist.BuiltinCommHookType.ALLREDUCE or
        FP16_COMPRESS): no Python runs per bucket."""
        self.reducer._register_builtin_comm_hook(comm_hook_type)

    def _set_static_graph(self):
        if self.static_graph:
            return
        if self.reducer.num_iterations > 0:
            raise RuntimeError("_set_static_graph must be called before the first forward pass")
        self.static_graph = True
        self.reducer = dist.Reducer(self._params, self.reducer._bucket_indices(),
                                    [self.bucket_bytes_cap] * len(self.reducer._bucket_indices()),
                                    self.process_group, self.bucket_bytes_cap,
                                    self.find_unused_parameters, self.gradient_as_bucket_view,
                                    True, self._first_bucket_bytes, self._param_names)

    # ---- join (uneven inputs) ----

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """The Join context manager for this model (ember.distributed.algorithms.Join)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _sync_final_model(self, is_last_joiner):
        rank = dist.get_rank(self.process_group)
        t = ember.tensor([rank if is_last_joiner else -1], dtype=ember.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        src = int(t.item())
        if src < 0:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process.")
        self._authoritative_rank = src
        self._sync_module_states(dist.get_global_rank(self.process_group, src)
                                 if self.process_group is not dist.group.WORLD else src)
