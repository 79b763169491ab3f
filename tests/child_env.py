"""The environment for a test's child Python process.

The child must import the ember this test process imported: the dev tree when the suite
runs with PYTHONPATH=python, the installed wheel under CI. Pointing it at the checkout's
python/ directory instead breaks under CI, where that tree has no built extension (the
child then fails with "cannot import name '_C' from partially initialized module")."""
import os

import ember

EMBER_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))


def child_env(**extra):
    """os.environ with ember's parent directory first on PYTHONPATH, updated with `extra`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [EMBER_PARENT, env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def run_at_capability(code, capability, timeout=300):
    """Runs the script `code` in a child Python (child_env) with the best CPU kernel copy, or
    with `capability` ("default", "avx2") forced through EMBER_CPU_CAPABILITY; returns its
    stdout, after checking that it exited cleanly."""
    import subprocess
    import sys
    extra = {} if capability == "best" else {"EMBER_CPU_CAPABILITY": capability}
    out = subprocess.run([sys.executable, "-c", code], env=child_env(**extra),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"EMBER_CPU_CAPABILITY={capability}:\n{out.stderr[-3000:]}"
    return out.stdout
