"""Every public callable of ember, ember.nn.functional, ember.linalg and every public Tensor
method is either covered by the op registry (ember.testing.registry, plus the elementwise
op table) or listed in registry/_exempt.py with the reason it is not."""
import inspect

import ember
from ember.testing import registry
from ember.testing.registry._exempt import EXEMPT


def _public(ns, prefix):
    out = set()
    for n in dir(ns):
        if n.startswith("_"):
            continue
        v = getattr(ns, n)
        if inspect.ismodule(v) or isinstance(v, type) or not callable(v):
            continue
        out.add(prefix + n)
    return out


def public_names():
    names = _public(ember, "")
    names |= _public(ember.nn.functional, "nn.functional.")
    names |= _public(ember.linalg, "linalg.")
    names |= {"Tensor." + n for n in dir(ember.Tensor)
              if not n.startswith("_") and callable(getattr(ember.Tensor, n, None))}
    return names


def test_every_public_op_is_registered_or_exempt():
    covered = registry.registered_names()
    missing = sorted(n for n in public_names() if n not in covered and n not in EXEMPT)
    assert not missing, (f"{len(missing)} public names are neither in the op registry nor in "
                         f"registry/_exempt.py: {missing}")


def test_exemptions_have_reasons_and_are_current():
    names = public_names()
    covered = registry.registered_names()
    for n, why in EXEMPT.items():
        assert isinstance(why, str) and len(why) > 8, f"{n}: exemption without a reason"
    stale = sorted(n for n in EXEMPT if n not in names or n in covered)
    assert not stale, f"exempt names that no longer exist or are now registered: {stale}"


def test_import_ember_does_not_build_the_registry():
    import subprocess
    import sys
    code = ("import ember, sys; from ember.testing import registry; "
            "assert registry._entries is None; "
            "assert not any(m.startswith('ember.testing.registry.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
