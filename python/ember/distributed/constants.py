"""Defaults of ember.distributed (PyTorch's values)."""
from datetime import timedelta

# The timeout of a process group's operations when init_process_group is given none.
default_pg_timeout = timedelta(minutes=30)
# The store's own timeout (connecting, waiting for keys) when a TCPStore is given none.
default_store_timeout = timedelta(seconds=300)
