"""ember.amp: automatic mixed precision (autocast regions and GradScaler)."""
from .autocast_mode import (  # noqa: F401
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler  # noqa: F401

