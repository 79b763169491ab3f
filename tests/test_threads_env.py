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
