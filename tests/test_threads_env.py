"""The default thread count honours EMBER_NUM_THREADS, then OMP_NUM_THREADS."""
import os
import subprocess
import sys

import pytest


def _threads(env):
    full = {k: v for k, v in os.environ.items() if k not in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", "import ember; print(ember.get_num_threads())"],
                         env=full, capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.parametrize("env,expected", [
    ({"EMBER_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "2"}, 2),
    ({"EMBER_NUM_THREADS": "5", "OMP_NUM_THREADS": "2"}, 5),
])
def test_env_sets_the_default(env, expected):
    assert _threads(env) == expected


@pytest.mark.parametrize("bad", ["0", "-1", "two", "4x", ""])
def test_bad_values_fall_back_to_the_core_count(bad):
    assert _threads({"EMBER_NUM_THREADS": bad}) == (os.cpu_count() or 1)


_POOL_SCRIPT = """
import time
import numpy as np
import ember
ember.set_num_threads(4)  # more threads than cores: spinning workers must still yield
a = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
x = ember.from_numpy(a)
want = float(a.astype(np.float64).sum())
for i in range(300):
    assert abs(x.sum().item() - want) < 1e-2, i
    assert float((x + x).sum().item()) == float((2 * x).sum().item())
    if i % 50 == 0:
        time.sleep(0.002)  # longer than the spin: the workers block, then wake
try:  # an op's error between parallel ops reaches the caller; the pool keeps working
    ember.from_numpy(np.arange(1 << 20)).index_select(0, ember.tensor([1 << 21]))
except IndexError:
    pass
else:
    raise SystemExit("no IndexError")
assert abs(x.sum().item() - want) < 1e-2
print("ok")
"""


@pytest.mark.parametrize("policy", [None, "passive", "PASSIVE", "active"])
def test_pool_back_to_back_ops(policy):
    # Note [Spinning workers]: workers spin between ops unless OMP_WAIT_POLICY=passive.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", _POOL_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# Records OPENBLAS_THREAD_TIMEOUT at the moment scipy_openblas32 (which loads OpenBLAS, and
# OpenBLAS reads the variable then) is imported by `import ember`, and after the import.
_LOAD_SCRIPT = """
import builtins, os
seen = []
real_import = builtins.__import__
def spy(name, *args, **kwargs):
    if name == "scipy_openblas32" and not seen:
        seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    return real_import(name, *args, **kwargs)
builtins.__import__ = spy
import ember
print(seen[0], os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
"""


def _load_run(env):
    from child_env import child_env
    full = child_env()
    full.pop("OPENBLAS_THREAD_TIMEOUT", None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT], env=full, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split()


def test_openblas_is_loaded_with_sleeping_workers():
    # python/ember/_blas.py: OpenBLAS's workers would spin ~2**28 cycles after each call on
    # the cores ember's own pool needs (resnet18 at batch 1 on 2 threads: 91-140 ms a forward
    # with the default, 70-79 ms with 4); the environment is restored after the load.
    assert _load_run({}) == ["4", "None"]


def test_a_user_openblas_thread_timeout_is_kept():
    assert _load_run({"OPENBLAS_THREAD_TIMEOUT": "20"}) == ["20", "20"]


# Counts the read system calls a loop of small ops makes, from /proc/self/io, in a process
# that never sets a thread count (the default a user gets).
_SYSCALL_SCRIPT = """
import ember
import ember.nn.functional as F
x, w, b, y = ember.randn(8, 64), ember.randn(128, 64), ember.randn(128), ember.randn(1000)
def reads():
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("syscr:")).split()[1])
for _ in range(20):
    F.linear(x, w, b); y.sum(); y + y
before = reads()
for _ in range(500):
    F.linear(x, w, b); y.sum(); y + y
print(reads() - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_the_default_thread_count_is_read_once():
    # get_num_threads() asked std::thread::hardware_concurrency() on every call, which opens
    # and reads /sys/devices/system/cpu/online: ~20 us added to every GEMM, reduction and
    # parallel loop of a program that never called set_num_threads (sum of 1000 floats:
    # 24 us instead of 1.2 us). The loop must make no per-op system calls.
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", _SYSCALL_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 20, f"{out.stdout.strip()} read calls for 1500 small ops"
