"""Training algorithms on top of the collectives: Join (uneven inputs) and DDP comm hooks."""
from .join import Join, Joinable, JoinHook  # noqa: F401
