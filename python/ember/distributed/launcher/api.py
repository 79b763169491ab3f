"""The launcher's agent (one per node): meets the other nodes' agents through a TCPStore,
starts this node's workers, watches them, and on a failure stops every worker of the job,
restarts them (``max_restarts``) or reports the failing rank's traceback and exit code.

The agent on node 0 (or the first to bind the rendezvous endpoint) hosts the job's TCPStore;
workers reach it as MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE), so it outlives
any worker and a restarted job reads fresh keys (one prefix per attempt)."""
import json
import os
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from ember._C import _distributed as _d
from ember.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

from .workers import Worker, stop_workers

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]


@dataclass
class LaunchConfig:
    min_nodes: int
    max_nodes: int
    nproc_per_node: int
    run_id: str = ""
    role: str = "default"
    rdzv_endpoint: str = ""
    rdzv_backend: str = "static"
    rdzv_configs: dict = field(default_factory=dict)
    rdzv_timeout: int = 900
    max_restarts: int = 0
    monitor_interval: float = 0.1
    start_method: str = "spawn"
    log_dir: str = None
    local_addr: str = None
    node_rank: int = None
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    stop_grace: float = 5.0


class _Signal(Exception):
    def __init__(self, signum):
        super().__init__(f"Process {os.getpid()} got signal: {signum}")
        self.sigval = signum


def _raise_signal(signum, frame):
    raise _Signal(signum)


class _Agent:
    def __init__(self, config, cmd, name):
        self.c = config
        self.cmd = cmd
        self.name = name
        self.run_id = config.run_id or "none"
        self.timeout = timedelta(seconds=config.rdzv_timeout)
        self.host = socket.gethostname()

    # ---- rendezvous ----

    def connect(self):
        c = self.c
        if c.rdzv_endpoint:
            host, _, port = c.rdzv_endpoint.rpartition(":")
            host = host.strip("[]") or "127.0.0.1"
            port = int(port) if port else 29400
        else:
            host, port = c.master_addr, int(c.master_port)
        hosting = False
        if c.node_rank is not None:
            hosting = c.node_rank == 0
            store = _d.TCPStore(host, port, None, hosting, self.timeout, wait_for_workers=False)
        else:  # c10d-style rendezvous: the first agent to bind the endpoint hosts the store
            try:
                store = _d.TCPStore(host, port, None, True, self.timeout, wait_for_workers=False)
                hosting = True
            except _d.DistNetworkError:
                store = _d.TCPStore(host, port, None, False, self.timeout, wait_for_workers=False)
        self.master = (host, store.port)
        self.raw_store = store
        self.store = _d.PrefixStore(f"ember_run/{self.run_id}", store)
        self.hosting = hosting
        nnodes = c.max_nodes
        if c.node_rank is not None:
            self.node_rank = c.node_rank
            if not 0 <= self.node_rank < nnodes:
                raise ValueError(f"--node-rank {self.node_rank} is out of range for --nnodes {nnodes}")
        else:
            self.node_rank = self.store.add("rdzv/arrivals", 1) - 1
            if self.node_rank >= nnodes:
                raise RuntimeError(f"more than {nnodes} nodes joined rendezvous {self.run_id}")
        self.nnodes = nnodes
        self.store.set(f"rdzv/node/{self.node_rank}",
                       json.dumps({"nproc": c.nproc_per_node, "host": self.host}))
        keys = [f"rdzv/node/{i}" for i in range(nnodes)]
        try:
            self.store.wait(keys, self.timeout)
        except _d.DistStoreError:
            joined = sum(self.store.check([k]) for k in keys)
            raise RuntimeError(f"rendezvous timed out after {self.timeout.total_seconds():.0f} s: "
                               f"{joined} of {nnodes} nodes joined") from None
        nprocs = [json.loads(v)["nproc"] for v in self.store.multi_get(keys)]
        self.world_size = sum(nprocs)
        self.base_rank = sum(nprocs[:self.node_rank])

    # ---- workers ----

    def start(self, attempt, err_dir):
        c = self.c
        workers = []
        for local_rank in range(c.nproc_per_node):
            rank = self.base_rank + local_rank
            env = dict(os.environ)
            env.update({
                "LOCAL_RANK": str(local_rank), "RANK": str(rank), "GROUP_RANK": str(self.node_rank),
                "ROLE_RANK": str(rank), "ROLE_NAME": c.role, "LOCAL_WORLD_SIZE": str(c.nproc_per_node),
                "WORLD_SIZE": str(self.world_size), "GROUP_WORLD_SIZE": str(self.nnodes),
                "ROLE_WORLD_SIZE": str(self.world_size), "MASTER_ADDR": self.master[0],
                "MASTER_PORT": str(self.master[1]), "TORCHELASTIC_RESTART_COUNT": str(attempt),
                "TORCHELASTIC_MAX_RESTARTS": str(c.max_restarts),
                "TORCHELASTIC_RUN_ID": self.run_id, "TORCHELASTIC_USE_AGENT_STORE": "True",
                "TORCH_NCCL_ASYNC_ERROR_HANDLING": env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
                "TORCHELASTIC_ERROR_FILE": os.path.join(err_dir, str(local_rank), "error.json"),
            })
            if c.local_addr:
                env["EMBER_LOCAL_ADDR"] = c.local_addr
            if "OMP_NUM_THREADS" not in os.environ and c.nproc_per_node > 1:
                env["OMP_NUM_THREADS"] = "1"
            log_dir = (os.path.join(c.log_dir, self.run_id, f"attempt_{attempt}", str(local_rank))
                       if c.log_dir else None)
            workers.append(Worker(local_rank, rank, self.cmd, env, env["TORCHELASTIC_ERROR_FILE"],
                                  log_dir))
        return workers

    def failure_of(self, w, code):
        return ProcessFailure(w.local_rank, w.pid, code, w.error_file, rank=w.rank,
                              traceback_text=w.last_traceback(), host=self.host)

    def monitor(self, workers, attempt):
        """Returns None when every worker of this node succeeded, else the failures (this
        node's, or the one another agent published)."""
        key = f"attempt/{attempt}/failed"
        while True:
            codes = [w.poll() for w in workers]
            bad = [(w, code) for w, code in zip(workers, codes) if code not in (None, 0)]
            if bad:
                w, code = min(bad, key=lambda b: b[0].rank)
                f = self.failure_of(w, code)
                self.store.compare_set(key, "", json.dumps({
                    "rank": f.rank, "local_rank": f.local_rank, "pid": f.pid, "exitcode": code,
                    "host": f.host, "node": self.node_rank, "time": f.timestamp,
                    "traceback": (f.traceback or "")[-16000:], "error_file": f.error_file}))
                failures = {f.rank: f}
                stop_workers(workers, self.c.stop_grace)
                for other, c2 in bad:
                    if other is not w:
                        failures[other.rank] = self.failure_of(other, c2)
                return failures
            if all(code == 0 for code in codes):
                return None
            if self.nnodes > 1 and self.store.check([key]):
                stop_workers(workers, self.c.stop_grace)
                return self.remote_failure(key)
            time.sleep(self.c.monitor_interval)

    def remote_failure(self, key):
        info = json.loads(self.store.get(key))
        f = ProcessFailure(info["local_rank"], info["pid"], info["exitcode"], None,
                           rank=info["rank"], traceback_text=info["traceback"],
                           timestamp=info["time"], host=f"{info['host']} (node {info['node']})")
        return {f.rank: f}

    def run(self):
        c = self.c
        self.connect()
        import tempfile

        base_err = tempfile.mkdtemp(prefix=f"emberrun_{self.run_id}_")
        attempt = 0
        while True:
            workers = self.start(attempt, os.path.join(base_err, f"attempt_{attempt}"))
            try:
                failures = self.monitor(workers, attempt)
            except BaseException:
                stop_workers(workers, c.stop_grace)
                raise
            for w in workers:
                w.close()
            if failures is None:
                self.exit_barrier(attempt)
                return
            rank = min(failures)
            if attempt < c.max_restarts:
                print(f"[emberrun] worker rank {rank} failed (exit code {failures[rank].exitcode}); "
                      f"restarting the workers ({attempt + 1}/{c.max_restarts})", file=sys.stderr)
                self.barrier(f"attempt/{attempt}/stopped")
                attempt += 1
                continue
            raise ChildFailedError(self.name, failures)

    def barrier(self, key):
        n = self.store.add(key, 1)
        if n < self.nnodes:
            self.store.wait([f"{key}/all"], self.timeout)
        else:
            self.store.set(f"{key}/all", "")

    def exit_barrier(self, attempt):
        # The node hosting the store must outlive every other node's workers.
        key = f"attempt/{attempt}/done"
        if self.nnodes == 1:
            return
        self.store.add(key, 1)
        deadline = time.monotonic() + self.timeout.total_seconds()
        while time.monotonic() < deadline:
            if int(self.store.add(key, 0)) >= self.nnodes:
                # The host leaves last: the others tell it they no longer need the store.
                left = self.store.add(f"{key}/left", 0 if self.hosting else 1)
                while self.hosting and left < self.nnodes - 1 and time.monotonic() < deadline:
                    time.sleep(self.c.monitor_interval)
                    left = self.store.add(f"{key}/left", 0)
                return
            if self.store.check([f"attempt/{attempt}/failed"]):
                raise ChildFailedError(self.name, self.remote_failure(f"attempt/{attempt}/failed"))
            time.sleep(self.c.monitor_interval)


def launch_agent(config, entrypoint, args, name=None):
    """Runs the job of ``entrypoint`` (a command: list of strings) on this node; raises
    ChildFailedError when it fails."""
    cmd = [entrypoint, *args] if isinstance(entrypoint, str) else [*entrypoint, *args]
    if not config.run_id:
        config.run_id = str(uuid.uuid4().int)[:12]
    agent = _Agent(config, cmd, name or os.path.basename(str(cmd[-len(args) - 1]) if cmd else "job"))
    handlers = {}
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            handlers[s] = signal.signal(s, _raise_signal)
        except ValueError:  # not the main thread
            pass
    try:
        agent.run()
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


class elastic_launch:  # noqa: N801 - torch.distributed.launcher.api.elastic_launch
    """``elastic_launch(config, entrypoint)(*args)``: runs ``entrypoint`` (a script command)
    under the launcher's agent."""

    def __init__(self, config, entrypoint):
        self._config = config
        self._entrypoint = entrypoint

    def __call__(self, *args):
        return launch_agent(self._config, self._entrypoint, list(args))
