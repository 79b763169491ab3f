"""The launcher (python -m ember.distributed.run, emberrun): torchrun's environment, failure
reports (the failing rank's traceback and exit code; the other workers stopped), restarts, two
"nodes" on the loopback addresses 127.0.0.1 and 127.0.0.2, and the DDP example through it."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="built without Gloo")

RUN = [sys.executable, "-m", "ember.distributed.run"]


def script(tmp_path, body, name="job.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


def launch(args, timeout=90, env=None):
    e = dict(os.environ)
    e.pop("OMP_NUM_THREADS", None)
    e.update(env or {})
    return subprocess.run(RUN + args, capture_output=True, text=True, timeout=timeout, env=e)


ENV_JOB = """
import os, sys
import ember, ember.distributed as dist
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "GROUP_RANK", "OMP_NUM_THREADS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"]
dist.init_process_group("gloo")
t = ember.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
line = " ".join(["ENV", " ".join(f"{k}={os.environ.get(k)}" for k in keys), "SUM",
                 str(t.item()), "ADDR", dist.group.WORLD._engine_address(), "ARGS",
                 str(sys.argv[1:])])
os.write(1, (line + chr(10)).encode())  # one write: the workers share the launcher's stdout
dist.destroy_process_group()
"""


def parse(out):
    rows = []
    for line in out.splitlines():
        if line.startswith("ENV "):
            env = dict(kv.split("=", 1) for kv in line.split(" SUM ")[0].split()[1:])
            rows.append((env, float(line.split(" SUM ")[1].split()[0]), line))
    return sorted(rows, key=lambda r: int(r[0]["RANK"]))


def test_standalone_sets_torchrun_environment(tmp_path):
    r = launch(["--standalone", "--nproc-per-node", "2", script(tmp_path, ENV_JOB), "--lr", "3"])
    assert r.returncode == 0, r.stderr
    rows = parse(r.stdout)
    assert len(rows) == 2
    for i, (env, total, line) in enumerate(rows):
        assert env["RANK"] == env["LOCAL_RANK"] == str(i)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["GROUP_RANK"] == "0"
        assert env["OMP_NUM_THREADS"] == "1" and env["TORCHELASTIC_RESTART_COUNT"] == "0"
        assert total == 3.0
        assert "ARGS ['--lr', '3']" in line
    assert "Setting OMP_NUM_THREADS environment variable" in r.stderr


def test_underscore_flags_and_env_defaults(tmp_path):
    r = launch(["--standalone", "--nproc_per_node=1", script(tmp_path, ENV_JOB)],
               env={"PET_NPROC_PER_NODE": "3"})
    assert r.returncode == 0, r.stderr
    assert len(parse(r.stdout)) == 1
    r = launch(["--standalone", script(tmp_path, ENV_JOB)], env={"PET_NPROC_PER_NODE": "2"})
    assert r.returncode == 0, r.stderr
    assert len(parse(r.stdout)) == 2
    # c10d-style rendezvous at an endpoint (the launcher that binds it hosts the store)
    port = dist._d._find_free_port("127.0.0.1")
    r = launch(["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                "--nproc-per-node", "2", script(tmp_path, ENV_JOB)])
    assert r.returncode == 0, r.stderr
    assert [row[0]["MASTER_PORT"] for row in parse(r.stdout)] == [str(port)] * 2


FAIL_JOB = """
import os, sys, time
import ember.distributed as dist
dist.init_process_group("gloo")
with open(os.path.join(sys.argv[1], f"pid{dist.get_rank()}"), "w") as f:
    f.write(str(os.getpid()))
if dist.get_rank() == 1:
    time.sleep(0.5)
    {action}
time.sleep(600)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("action,exitcode", [
    ("raise ValueError('worker one gives up')", "1"),
    ("os.kill(os.getpid(), 9)", "-9 (signal SIGKILL)"),
    ("sys.exit(3)", "3"),
])
def test_failure_is_reported_and_the_others_stopped(tmp_path, action, exitcode):
    job = script(tmp_path, FAIL_JOB.replace("{action}", action))
    r = launch(["--standalone", "--nproc-per-node", "2", job, str(tmp_path)], timeout=60)
    assert r.returncode == 1, r.stderr
    err = r.stderr
    assert "ChildFailedError" in err and "job.py FAILED" in err
    assert "Root Cause (first observed failure):" in err
    assert "rank      : 1 (local_rank: 1)" in err
    assert f"exitcode  : {exitcode}" in err
    if "raise" in action:
        assert "ValueError: worker one gives up" in err
        assert "Traceback (most recent call last):" in err
    for r_ in (0, 1):
        pid = int((tmp_path / f"pid{r_}").read_text())
        assert not alive(pid), f"worker {r_} (pid {pid}) is still running"


RECORD_JOB = """
from ember.distributed.elastic.multiprocessing.errors import record

@record
def main():
    raise KeyError("recorded")

main()
"""


def test_record_writes_the_error_file(tmp_path):
    r = launch(["--standalone", "--nproc-per-node", "1", script(tmp_path, RECORD_JOB)])
    assert r.returncode == 1
    assert "error_file: " in r.stderr and "error.json" in r.stderr
    assert "KeyError: 'recorded'" in r.stderr


RESTART_JOB = """
import os
import ember, ember.distributed as dist
dist.init_process_group("gloo")
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if attempt == 0 and dist.get_rank() == 0:
    raise RuntimeError("first attempt fails")
t = ember.ones(2)
dist.all_reduce(t)
os.write(1, (f"OK {attempt} {t.tolist()}" + chr(10)).encode())
"""


def test_max_restarts(tmp_path):
    r = launch(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                script(tmp_path, RESTART_JOB)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("OK 1 [2.0, 2.0]") == 2
    assert "restarting the workers (1/1)" in r.stderr


def test_two_nodes_on_two_loopback_addresses(tmp_path):
    job = script(tmp_path, ENV_JOB)
    port = str(dist._d._find_free_port("127.0.0.1"))
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
              "--master-port", port, "--rdzv-id", "twonodes"]
    e = dict(os.environ)
    nodes = [subprocess.Popen(RUN + common + ["--node-rank", str(i), "--local-addr", f"127.0.0.{i + 1}",
                                              job], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=e) for i in range(2)]
    outs = []
    try:
        for n in nodes:
            outs.append(n.communicate(timeout=90))
    finally:
        for n in nodes:
            if n.poll() is None:
                n.kill()
                n.wait()
    for n, (_out, err) in zip(nodes, outs):
        assert n.returncode == 0, err
    rows = parse(outs[0][0] + outs[1][0])
    assert [r[0]["RANK"] for r in rows] == ["0", "1"]
    assert [r[0]["GROUP_RANK"] for r in rows] == ["0", "1"]
    assert all(r[0]["WORLD_SIZE"] == "2" and r[0]["LOCAL_WORLD_SIZE"] == "1" for r in rows)
    assert all(r[1] == 3.0 for r in rows)
    assert "ADDR 127.0.0.1 " in rows[0][2] and "ADDR 127.0.0.2 " in rows[1][2]


def test_bad_arguments():
    r = launch(["--nnodes", "1:4", "x.py"])
    assert r.returncode == 2 and "elastic ranges" in r.stderr
    r = launch(["--nnodes", "2", "x.py"])
    assert r.returncode == 2 and "--node-rank" in r.stderr


def test_console_script_installed():
    from importlib import metadata

    try:
        eps = metadata.entry_points(group="console_scripts")
    except TypeError:  # Python < 3.10 API
        eps = metadata.entry_points().get("console_scripts", [])
    names = {ep.name: ep.value for ep in eps}
    if "emberrun" not in names:
        pytest.skip("ember is not pip-installed here (the checkout runs from PYTHONPATH)")
    assert names["emberrun"] == "ember.distributed.run:main"
    exe = os.path.join(os.path.dirname(sys.executable), "emberrun")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--nproc-per-node" in r.stdout


def test_ddp_example_through_the_launcher(tmp_path):
    from ember.vision import datasets

    try:
        datasets.FashionMNIST(root="data", train=True)
    except (RuntimeError, FileNotFoundError) as e:
        pytest.skip(f"FashionMNIST is not installed ({e})")
    r = launch(["--standalone", "--nproc-per-node", "2", "-m", "ember.examples.ddp_fashion_mnist",
                "--epochs", "2", "--limit", "4000", "--batch-size", "32"], timeout=240)
    assert r.returncode == 0, r.stderr
    assert "world size 2: 2000 of 4000 images per process" in r.stdout
    assert "replicas identical: True" in r.stdout
    acc = [float(line.split("test accuracy ")[1].split("%")[0])
           for line in r.stdout.splitlines() if "test accuracy" in line]
    assert len(acc) == 2 and acc[-1] > 60.0, r.stdout
