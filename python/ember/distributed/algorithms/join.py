"""Join: training with uneven inputs across ranks (torch.distributed.algorithms.join).

Inside ``with Join([ddp_model, ...]):`` a rank that runs out of data keeps *shadowing* the
collectives the still-training ranks issue (each joinable's JoinHook.main_hook), until every
rank has joined; then each hook's post_hook runs (DDP broadcasts the final model from the last
rank to join). Each iteration of a training rank announces itself with an all-reduce of 1
(notify_join_context); a joined rank contributes 0 to it, so the sum counts the ranks still
training."""
import warnings
from abc import ABC, abstractmethod

import ember
import ember.distributed as dist

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joined rank runs for one Joinable: main_hook() once per iteration of the ranks
    still training, post_hook(is_last_joiner) once all have joined."""

    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class _JoinConfig:
    def __init__(self, enable=False, throw_on_early_termination=False, is_first_joinable=False):
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable


class Joinable(ABC):
    """A class whose collectives a joined rank can shadow (DistributedDataParallel is one)."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig()

    @abstractmethod
    def join_hook(self, **kwargs):
        """The JoinHook a joined rank runs for this object."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join all-reduces."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The group of the join all-reduces."""


class Join:
    """Context manager for uneven inputs: ``with Join([model]): for batch in my_batches: ...``.
    ``throw_on_early_termination=True`` makes every rank raise as soon as one runs out."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(self._enable, self._throw_on_early_termination,
                                                is_first_joinable=i == 0)

    def _extract_dist_info(self):
        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = self._joinables[0].join_process_group
        self._rank = dist.get_rank(self._process_group)
        self._device = self._joinables[0].join_device

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        if not self._enable or type:
            return  # an exception propagates: do not shadow
        all_joined = False
        is_last_joiner = True
        i = 0
        while not all_joined:
            if i == 1000:
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means that "
                              f"rank {self._rank} has at least 1000 fewer inputs than other "
                              f"currently-active ranks. This level of skew could lead to "
                              f"performance degradation during training.", stacklevel=2)
            if self._num_nonjoined() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                i += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _num_nonjoined(self):
        t = ember.zeros(1, device=self._device)
        dist.all_reduce(t, group=self._process_group)
        return t.item()

    def _notify_procs_to_terminate(self):
        ones = ember.ones(1, device=self._device)
        dist.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by a joinable each iteration (before its collectives): all-reduces 1 so the
        joined ranks can count the ranks still training; returns the async Work (or None)."""
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device, group = joinable.join_device, joinable.join_process_group
        work = dist.all_reduce(ember.ones(1, device=device), group=group, async_op=True)
        if config.throw_on_early_termination:
            zeros = ember.zeros(1, device=device)
            dist.all_reduce(zeros, group=group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return work
