"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks)."""
from enum import Enum
from functools import partial

from . import default_hooks  # noqa: F401

__all__ = ["DDPCommHookType", "register_ddp_comm_hook", "default_hooks"]


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


class DDPCommHookType(Enum):
    """The stock hooks: ``DDPCommHookType.FP16_COMPRESS.value(model=ddp, state=None)``."""

    ALLREDUCE = partial(_ddp_comm_hook_wrapper, comm_hook=default_hooks.allreduce_hook)
    FP16_COMPRESS = partial(_ddp_comm_hook_wrapper, comm_hook=default_hooks.fp16_compress_hook)
    BF16_COMPRESS = partial(_ddp_comm_hook_wrapper, comm_hook=default_hooks.bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Registers one of the stock hooks on a DistributedDataParallel model."""
    comm_hook_type.value(model=model, state=state)
