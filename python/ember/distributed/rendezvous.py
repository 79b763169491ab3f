"""init_method URLs: how the processes of a job find each other's store.

``env://`` reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (what emberrun sets);
``tcp://host:port?rank=r&world_size=n`` names the store's host; ``file:///path`` a file that
every process can open. Rank 0 hosts the TCPStore, unless the launcher's agent already does
(TORCHELASTIC_USE_AGENT_STORE)."""
import os
from urllib.parse import parse_qs, urlparse

from ember._C import _distributed as _d

__all__ = ["rendezvous"]


def _env(name, what):
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing ember.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set "
                         f"({what}; emberrun sets it)")
    return value


def _int_arg(value, name, url):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"Error initializing ember.distributed using {url}: {name} must be an "
                         f"integer, got {value!r}") from None


def _tcp_store(host, port, rank, world_size, timeout):
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    store = _d.TCPStore(host, port, world_size, rank == 0 and not agent, timeout,
                        wait_for_workers=not agent)
    if agent:
        # One prefix per restart of the job, so a restarted worker never reads stale keys.
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        store = _d.PrefixStore(f"/worker/attempt_{attempt}", store)
    return store


def rendezvous(url, rank=-1, world_size=-1, timeout=None):
    """Returns (store, rank, world_size) for an init_method URL."""
    if not isinstance(url, str):
        raise TypeError(f"init_method must be a string, got {type(url).__name__}")
    parsed = urlparse(url)
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    if rank < 0 and "rank" in query:
        rank = _int_arg(query["rank"], "rank", url)
    if world_size < 0 and "world_size" in query:
        world_size = _int_arg(query["world_size"], "world_size", url)
    if parsed.scheme == "env":
        if rank < 0:
            rank = _int_arg(_env("RANK", "this process's rank"), "RANK", url)
        if world_size < 0:
            world_size = _int_arg(_env("WORLD_SIZE", "the number of processes"), "WORLD_SIZE", url)
        host = _env("MASTER_ADDR", "the address of rank 0's store")
        port = _int_arg(_env("MASTER_PORT", "the port of rank 0's store"), "MASTER_PORT", url)
        return _tcp_store(host, port, rank, world_size, timeout), rank, world_size
    if rank < 0 or world_size < 0:
        raise ValueError(f"Error initializing ember.distributed using {url}: rank and world_size "
                         "must be given (as arguments or in the URL's query)")
    if parsed.scheme == "tcp":
        if not parsed.hostname or not parsed.port:
            raise ValueError(f"port number missing in init_method {url!r}")
        return _tcp_store(parsed.hostname, parsed.port, rank, world_size, timeout), rank, world_size
    if parsed.scheme == "file":
        path = parsed.path
        if not path:
            raise ValueError(f"file path missing in init_method {url!r}")
        store = _d.FileStore(path, world_size)
        if timeout is not None:
            store.set_timeout(timeout)
        return store, rank, world_size
    raise RuntimeError(f"No rendezvous handler for {parsed.scheme}://")
