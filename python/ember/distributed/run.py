"""``python -m ember.distributed.run`` (also installed as ``emberrun``): torchrun for ember.

Starts ``--nproc-per-node`` copies of a training script on this node with RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and torchrun's other variables) set,
so ``init_process_group("gloo")`` needs no arguments. Several nodes meet through a TCPStore
hosted by node 0's launcher (``--nnodes``, ``--node-rank``, ``--master-addr``,
``--master-port``) or at ``--rdzv-endpoint``. When a worker fails, every worker of the job is
stopped, then restarted (``--max-restarts``) or the failing rank's traceback and exit code are
reported and the launcher exits with status 1. Every flag can also be set as an environment
variable PET_<FLAG> (PET_NPROC_PER_NODE=2), as with torchrun.

Examples::

    emberrun --standalone --nproc-per-node 2 train.py --epochs 3
    emberrun --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr 10.0.0.1 train.py
"""
import os
import sys
from argparse import REMAINDER, ArgumentParser

from ember._C import _distributed as _d
from ember.distributed.elastic.multiprocessing.errors import ChildFailedError
from ember.distributed.launcher.api import LaunchConfig, launch_agent

__all__ = ["get_args_parser", "parse_args", "config_from_args", "run", "main"]


def _env(name, default):
    return os.environ.get("PET_" + name.upper(), default)


def get_args_parser():
    p = ArgumentParser(prog="emberrun", description="ember's distributed launcher (torchrun)")

    def flag(*names, **kw):
        dest = kw.get("dest") or names[0].lstrip("-").replace("-", "_")
        if "default" in kw and kw.get("action") is None:
            kw["default"] = _env(dest, kw["default"])
        spellings = []
        for n in names:
            spellings.append(n)
            if "-" in n.lstrip("-") and n.startswith("--"):
                spellings.append("--" + n[2:].replace("-", "_"))
        p.add_argument(*spellings, **kw)

    flag("--nnodes", type=str, default="1", help="number of nodes, or MIN:MAX (equal)")
    flag("--nproc-per-node", type=str, default="1",
         help="workers per node: a number, 'cpu', 'gpu' or 'auto'")
    flag("--rdzv-backend", type=str, default="static", help="'static' or 'c10d' (the same here)")
    flag("--rdzv-endpoint", type=str, default="", help="host:port of the rendezvous store")
    flag("--rdzv-id", type=str, default="none", help="the job's id (same on every node)")
    flag("--rdzv-conf", type=str, default="", help="key=value,... (join_timeout=SECONDS)")
    flag("--standalone", action="store_true",
         help="one node; the store runs on a free local port (no --master-* needed)")
    flag("--max-restarts", type=int, default=0, help="restarts of the workers after a failure")
    flag("--monitor-interval", type=float, default=0.1, help="seconds between worker checks")
    flag("--start-method", type=str, default="spawn", choices=["spawn", "fork", "forkserver"],
         help="accepted for torchrun compatibility: workers are always fresh processes")
    flag("--role", type=str, default="default", help="the workers' ROLE_NAME")
    flag("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    flag("--no-python", action="store_true", help="run the script as an executable")
    flag("--run-path", action="store_true", help="run the script with runpy.run_path")
    flag("--log-dir", type=str, default=None, help="also write each worker's output here")
    flag("-r", "--redirects", type=str, default="0", help="accepted (output goes to --log-dir)")
    flag("-t", "--tee", type=str, default="0", help="accepted (output goes to --log-dir)")
    flag("--node-rank", type=int, default=None, help="this node's rank (static rendezvous)")
    flag("--master-addr", type=str, default="127.0.0.1", help="node 0's address")
    flag("--master-port", type=int, default=29500, help="node 0's store port")
    flag("--local-addr", type=str, default=None,
         help="the address this node's workers listen on (EMBER_LOCAL_ADDR)")
    p.add_argument("training_script", type=str, help="the script (or module, or executable)")
    p.add_argument("training_script_args", nargs=REMAINDER)
    return p


def parse_args(args):
    return get_args_parser().parse_args(args)


def _nnodes(value):
    lo, _, hi = str(value).partition(":")
    lo, hi = int(lo), int(hi or lo)
    if lo != hi:
        raise ValueError(f"--nnodes {value}: elastic ranges (MIN:MAX with MIN < MAX) are not "
                         "supported; give a fixed number of nodes")
    if lo < 1:
        raise ValueError(f"--nnodes must be positive, got {value}")
    return lo


def _nproc(value):
    if value in ("cpu", "auto", "gpu"):
        if value != "cpu":
            import ember

            n = ember.cuda.device_count() if ember.cuda.is_available() else 0
            if n > 0:
                return n
            if value == "gpu":
                raise ValueError("--nproc-per-node gpu: no CUDA device is available")
        return os.cpu_count() or 1
    n = int(value)
    if n < 1:
        raise ValueError(f"--nproc-per-node must be positive, got {value}")
    return n


def config_from_args(args):
    nnodes = _nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    conf = dict(kv.split("=", 1) for kv in args.rdzv_conf.split(",") if "=" in kv)
    cfg = LaunchConfig(min_nodes=nnodes, max_nodes=nnodes, nproc_per_node=nproc,
                       run_id=args.rdzv_id, role=args.role, rdzv_endpoint=args.rdzv_endpoint,
                       rdzv_backend=args.rdzv_backend, rdzv_configs=conf,
                       rdzv_timeout=int(conf.get("join_timeout", 900)),
                       max_restarts=args.max_restarts, monitor_interval=args.monitor_interval,
                       start_method=args.start_method, log_dir=args.log_dir,
                       local_addr=args.local_addr, node_rank=args.node_rank,
                       master_addr=args.master_addr, master_port=args.master_port)
    if args.standalone:
        if nnodes != 1:
            raise ValueError("--standalone runs one node: drop --nnodes or set it to 1")
        cfg.rdzv_endpoint = ""
        cfg.node_rank = 0
        cfg.master_addr = "127.0.0.1"
        cfg.master_port = _d._find_free_port("127.0.0.1")
        if cfg.run_id == "none":
            import uuid

            cfg.run_id = str(uuid.uuid4().int)[:12]
    elif not cfg.rdzv_endpoint and cfg.node_rank is None:
        if nnodes > 1:
            raise ValueError("several nodes need --node-rank (with --master-addr/--master-port) "
                             "or --rdzv-endpoint")
        cfg.node_rank = 0
    if args.no_python and args.module:
        raise ValueError("Don't use both the '--no-python' flag and the '--module' flag at the "
                         "same time.")
    if args.no_python:
        cmd = [args.training_script]
    elif args.module:
        cmd = [sys.executable, "-u", "-m", args.training_script]
    elif args.run_path:
        cmd = [sys.executable, "-u", "-c",
               "import runpy, sys; sys.argv = sys.argv[1:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')", args.training_script]
    else:
        cmd = [sys.executable, "-u", args.training_script]
    return cfg, cmd, list(args.training_script_args)


def run(args):
    cfg, cmd, script_args = config_from_args(args)
    if "OMP_NUM_THREADS" not in os.environ and cfg.nproc_per_node > 1:
        print("*****************************************\n"
              "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
              "to avoid your system being overloaded, please further tune the variable for "
              "optimal performance in your application as needed. \n"
              "*****************************************", file=sys.stderr)
    launch_agent(cfg, cmd, script_args, name=os.path.basename(args.training_script))


def main(args=None):
    try:
        run(parse_args(sys.argv[1:] if args is None else args))
    except ChildFailedError as e:
        print(f"ember.distributed.elastic.multiprocessing.errors.ChildFailedError: {e}",
              file=sys.stderr)
        sys.exit(1)
    except ValueError as e:
        print(f"emberrun: error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - a signal or a rendezvous failure: say so, exit 1
        name = type(e).__name__
        print(f"emberrun: {name}: {e}", file=sys.stderr)
        sys.exit(128 + e.sigval if hasattr(e, "sigval") else 1)


if __name__ == "__main__":
    main()
