"""Legacy ember.cuda.amp (deprecated in PyTorch in favour of ember.amp)."""
import warnings

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast


class autocast(_autocast):
    """``ember.cuda.amp.autocast(args...)`` is ``ember.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`ember.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`ember.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        from .. import float16
        super().__init__("cuda", dtype=float16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`ember.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
