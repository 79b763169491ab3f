"""Fuzzing ember's public surface with hypothesis.

Random calls into the factories, views, indexing, reductions, joins and matmul,
every elementwise op of the op table (ember.testing.opinfo.op_db) and every
entry of the op registry (ember.testing.registry: each entry's samples, with
their tensors and arguments mutated), over random shapes (0 and sizes near
2**31, 2**62, 2**63), strides, offsets, dtypes, values at the integer limits,
non-contiguous and broadcast inputs and invalid arguments of every type.

Every call must return or raise one of ``ALLOWED``: never crash, abort, hang,
leave a tensor that cannot be read back, or (under tools/sanitize.sh) trip
AddressSanitizer or UndefinedBehaviorSanitizer. Tensors a call returns are read
back in full, so an out-of-bounds view shows up as a sanitizer report.

The fuzzing runs in a child process (a crash there fails the test with the seed
and the child's output instead of killing pytest) whose memory is capped
(RLIMIT_AS, or ASan's max_allocation_size_mb under the sanitizers), so that a huge
but valid size is an "out of memory" RuntimeError rather than a machine's worth
of pages. Environment:

* ``EMBER_FUZZ_SECONDS`` time budget (default 20 s in the normal suite);
* ``EMBER_FUZZ_SEED`` base seed (default 0, so CI is reproducible; ``random`` draws one,
  printed so that a failure can be rerun).

Run it alone: ``EMBER_FUZZ_SECONDS=120 python -m pytest tests/test_fuzz.py -q -s``.
"""
from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import time
import traceback

import pytest

# Exceptions a call may raise: PyTorch's for bad arguments and huge sizes.
ALLOWED = (RuntimeError, IndexError, TypeError, ValueError, OverflowError)

# Documented gaps: ops that raise NotImplementedError for some inputs (name -> why).
NOT_IMPLEMENTED_OK = {
}

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]
INT_LIMITS = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-2**15, 2**15 - 1),
              "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
# Sizes, strides, offsets and dims: small ones mostly, and every limit.
HUGE = [2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, -1, -2, -2**31, -2**63, 2**63, 2**64]
SPECIAL_INTS = [0, 1, -1, 2, 127, -128, 255, 2**15 - 1, -2**15, 2**31 - 1, -2**31, 2**31,
                2**62, -2**62, 2**63 - 1, -2**63]
SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e38, -1e308, 2.0**31, 2.0**63,
                  float("inf"), float("-inf"), float("nan")]
# Arguments of the wrong kind, for any parameter.
JUNK = [None, "x", 1.5, -1, 2**63, 2**64, -2**63 - 1, [], [1, "a"], (2**62, 2**62), object(),
        float("nan"), True, b"\x00"]
READBACK_LIMIT = 1 << 16
CALL_TIMEOUT = 60  # seconds for one call (a hang fails the fuzz with the call named)
MEMORY_LIMIT = 3 << 30


# ---- the fuzzing (runs in the child) ---------------------------------------------------

def _child_main(seconds: float, seed: int, last_call_path: str) -> int:
    import faulthandler
    faulthandler.enable()
    last_call_fd = os.open(last_call_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    import numpy as np  # noqa: F401  (loaded before ember, as users do)
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    import ember
    from ember.testing import opinfo
    try:
        from ember.testing import registry
        entries = registry.all_entries()
    except ImportError:
        entries = []

    dt = {n: getattr(ember, n) for n in DTYPES}

    # -- strategies
    small = st.integers(0, 4)
    size = st.one_of(small, small, small, st.sampled_from(HUGE))
    shape = st.lists(size, max_size=4)
    small_shape = st.lists(st.integers(0, 4), max_size=4)
    dtype_name = st.sampled_from(DTYPES)
    any_int = st.one_of(st.integers(-3, 5), st.sampled_from(HUGE))
    junk = st.sampled_from(JUNK)

    def values(d, n, draw):
        if d == "bool":
            return [draw(st.booleans()) for _ in range(n)]
        if d in INT_LIMITS:
            lo, hi = INT_LIMITS[d]
            pool = [v for v in SPECIAL_INTS if lo <= v <= hi] + [lo, hi]
            return [draw(st.one_of(st.sampled_from(pool), st.integers(lo, hi))) for _ in range(n)]
        return [draw(st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(-1e4, 1e4)))
                for _ in range(n)]

    any_dtype = st.sampled_from(DTYPES)

    @st.composite
    def tensors(draw, dtypes=any_dtype, shapes=small_shape, layouts=True):
        d = draw(dtypes)
        if draw(st.integers(0, 7)) == 0:  # an empty tensor with huge sizes beside its 0
            s = draw(shape)
            if 0 in s and min(s) >= 0:
                try:
                    return ember.zeros(s, dtype=dt[d])
                except ALLOWED:
                    pass
        s = draw(shapes)
        n = math.prod(s)
        base = ember.tensor(values(d, n, draw), dtype=dt[d]).reshape(s) if n else \
            ember.zeros(s, dtype=dt[d])
        if not layouts:
            return base
        kind = draw(st.sampled_from(["plain", "plain", "T", "step", "expand", "offset", "zero_stride"]))
        if kind == "T" and base.dim() >= 2:
            return base.transpose(0, base.dim() - 1)
        if kind == "step" and base.dim() >= 1:
            big = ember.cat([base, base], 0) if base.shape[0] else base
            return big[::2]
        if kind == "expand" and base.dim() >= 1 and base.shape[-1] > 0:
            return base[..., :1].expand(*base.shape[:-1], draw(st.integers(0, 3)))
        if kind == "offset" and n:
            flat = ember.cat([base.reshape(-1), base.reshape(-1)])
            return flat.as_strided(s, base.stride(), n)
        if kind == "zero_stride" and n:
            return base.reshape(-1)[:1].as_strided(s, [0] * len(s), 0)
        return base

    def readback(r, depth=0):
        if isinstance(r, ember.Tensor):
            _ = (r.shape, r.stride(), r.dtype, r.storage_offset())
            if r.numel() <= READBACK_LIMIT:
                r.clone()
                # tolist() builds one list per row: ones(2**31, 0) would be 2**31 empty lists
                lists, rows = 1, 1
                for d in r.shape[:-1]:
                    rows *= d
                    lists += rows
                if lists <= READBACK_LIMIT:
                    r.tolist()
        elif isinstance(r, (list, tuple)) and depth < 3:
            for v in r:
                readback(v, depth + 1)

    def desc(v, depth=0):
        if isinstance(v, ember.Tensor):
            return (f"tensor(shape={list(v.shape)}, stride={list(v.stride())}, "
                    f"offset={v.storage_offset()}, {v.dtype})")
        if isinstance(v, (list, tuple)) and depth < 3:
            inner = ", ".join(desc(u, depth + 1) for u in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        return repr(v)[:80]

    def call(name, f, *args, **kwargs):
        # Which call hangs or crashes: its description goes to a file the parent reads, and a
        # C-level watchdog dumps the Python stack and exits if one call takes too long.
        note = f"{name}({desc(args)[1:-1]}, **{ {k: desc(v) for k, v in kwargs.items()} })"
        data_ = note.encode()
        os.pwrite(last_call_fd, data_, 0)
        os.ftruncate(last_call_fd, len(data_))
        faulthandler.dump_traceback_later(CALL_TIMEOUT, exit=True)
        try:
            r = f(*args, **kwargs)
        except ALLOWED:
            return None
        except NotImplementedError:
            if name not in NOT_IMPLEMENTED_OK:
                raise
            return None
        finally:
            faulthandler.cancel_dump_traceback_later()
        faulthandler.dump_traceback_later(CALL_TIMEOUT, exit=True)
        try:
            readback(r)
        except ALLOWED:  # e.g. a returned tensor whose values cannot be converted
            pass
        finally:
            faulthandler.cancel_dump_traceback_later()
        return r

    # -- targets: each is a hypothesis test over st.data()

    def t_factories(data):
        f = data.draw(st.sampled_from(["ones", "zeros", "empty", "randn", "full", "arange"]))
        d = data.draw(st.one_of(dtype_name.map(lambda n: dt[n]), st.just(None), junk))
        if f == "full":
            return call(f, ember.full, data.draw(st.one_of(shape, junk)),
                        data.draw(st.one_of(st.sampled_from(SPECIAL_INTS + SPECIAL_FLOATS), junk)),
                        dtype=d)
        if f == "arange":
            nums = st.one_of(st.integers(-5, 10), st.sampled_from(SPECIAL_INTS + SPECIAL_FLOATS), junk)
            args = data.draw(st.lists(nums, min_size=1, max_size=3))
            return call(f, ember.arange, *args, dtype=d)
        fn = getattr(ember, f)
        if data.draw(st.booleans()):
            return call(f, fn, *data.draw(st.lists(st.one_of(size, junk), max_size=4)), dtype=d)
        return call(f, fn, data.draw(st.one_of(shape, junk)), dtype=d)

    def t_views(data):
        x = data.draw(tensors())
        op = data.draw(st.sampled_from(["as_strided", "view", "reshape", "expand", "permute",
                                        "transpose", "narrow", "flatten", "unsqueeze", "squeeze",
                                        "getitem"]))
        if op == "as_strided":
            n = data.draw(st.integers(0, 4))
            sz = data.draw(st.lists(size, min_size=n, max_size=n))
            sd = data.draw(st.lists(st.one_of(st.integers(-2, 3), st.sampled_from(HUGE)),
                                    min_size=n, max_size=n + data.draw(st.integers(0, 1))))
            off = data.draw(st.one_of(st.none(), st.integers(0, 8), st.sampled_from(HUGE)))
            return call(op, x.as_strided, sz, sd, off)
        if op in ("view", "reshape", "expand"):
            sz = data.draw(st.lists(st.one_of(st.integers(-1, 4), st.sampled_from(HUGE)), max_size=5))
            if data.draw(st.booleans()):
                return call(op, getattr(x, op), *sz)
            return call(op, getattr(x, op), data.draw(st.one_of(st.just(sz), junk)))
        if op == "permute":
            dims = data.draw(st.lists(any_int, max_size=5))
            return call(op, x.permute, *dims)
        if op == "transpose":
            return call(op, x.transpose, data.draw(any_int), data.draw(st.one_of(any_int, junk)))
        if op == "narrow":
            return call(op, x.narrow, data.draw(any_int), data.draw(any_int), data.draw(any_int))
        if op == "flatten":
            return call(op, x.flatten, data.draw(any_int), data.draw(any_int))
        if op in ("unsqueeze", "squeeze"):
            return call(op, getattr(x, op), data.draw(st.one_of(any_int, junk)))
        idx = data.draw(st.lists(st.one_of(
            any_int, st.just(None), st.just(Ellipsis),
            st.builds(slice, st.one_of(st.none(), any_int), st.one_of(st.none(), any_int),
                      st.one_of(st.none(), st.integers(-2, 3), st.sampled_from(HUGE)))),
            max_size=4))
        return call(op, lambda: x[tuple(idx)])

    def t_reductions(data):
        x = data.draw(tensors())
        op = data.draw(st.sampled_from(["sum", "mean", "max", "min", "argmax", "argmin", "cumsum",
                                        "prod", "amax", "all", "any", "std", "var", "median"]))
        f = getattr(x, op)
        how = data.draw(st.integers(0, 3))
        if how == 0:
            return call(op, f)
        kw = {}
        if data.draw(st.booleans()) and op not in ("cumsum",):
            kw["keepdim"] = data.draw(st.one_of(st.booleans(), junk))
        if data.draw(st.booleans()) and op in ("sum", "mean", "cumsum", "prod"):
            kw["dtype"] = data.draw(st.one_of(dtype_name.map(lambda n: dt[n]), junk))
        dim = data.draw(st.one_of(any_int, st.lists(any_int, max_size=3), junk))
        return call(op, f, dim, **kw)

    def t_indexing(data):
        x = data.draw(tensors())
        op = data.draw(st.sampled_from(["index_select", "gather", "scatter", "take", "index_put"]))
        idx = data.draw(tensors(dtypes=st.sampled_from(["int64", "int64", "int32", "bool", "float32"])))
        dim = data.draw(st.one_of(any_int, junk))
        if op == "index_select":
            return call(op, ember.index_select, x, dim, idx)
        if op == "gather":
            return call(op, ember.gather, x, dim, idx)
        if op == "scatter":
            src = data.draw(st.one_of(tensors(), st.sampled_from(SPECIAL_INTS + SPECIAL_FLOATS)))
            return call(op, ember.scatter, x, dim, idx, src)
        if op == "take":
            return call(op, ember.take, x, idx)
        val = data.draw(st.one_of(tensors(), st.sampled_from(SPECIAL_FLOATS)))
        return call(op, lambda: x.clone().index_put_((idx,), val))

    def t_join(data):
        op = data.draw(st.sampled_from(["cat", "stack"]))
        xs = data.draw(st.lists(tensors(), max_size=3))
        if data.draw(st.integers(0, 5)) == 0:
            xs = data.draw(st.one_of(junk, st.just(xs + [None])))
        return call(op, getattr(ember, op), xs, data.draw(st.one_of(any_int, junk)))

    def t_matmul(data):
        floats = st.sampled_from(["float32", "float64", "int64", "float16", "bool"])
        a = data.draw(tensors(dtypes=floats))
        b = data.draw(tensors(dtypes=floats))
        return call("matmul", ember.matmul, a, b)

    def t_elementwise(data):
        info = data.draw(st.sampled_from(opinfo.op_db))
        f = getattr(ember, info.name)
        a = data.draw(tensors())
        if info.arity == 1:
            if data.draw(st.integers(0, 3)) == 0:
                return call(info.name, getattr(a.clone(), info.name + "_", f))
            return call(info.name, f, a)
        b = data.draw(st.one_of(tensors(), tensors(), st.sampled_from(SPECIAL_INTS + SPECIAL_FLOATS),
                                junk))
        form = data.draw(st.integers(0, 4))
        if form == 0:
            return call(info.name, f, b, a)
        if form == 1:
            inplace = getattr(a.clone(), info.name + "_", None)
            if inplace is not None:
                return call(info.name, inplace, b)
        if form == 2:
            out = data.draw(tensors(layouts=False))
            return call(info.name, f, a, b, out=out)
        return call(info.name, f, a, b)

    def mutate(data, v, depth=0):
        """A variant of a sample argument: a tensor changed in layout/dtype/values, an int
        pushed to a limit, or junk."""
        if isinstance(v, ember.Tensor):
            k = data.draw(st.integers(0, 6))
            if k == 0:
                return data.draw(tensors())
            if v.layout != ember.strided:  # sparse: no strided views to take
                return v
            if k == 1 and v.dim() >= 2:
                return v.transpose(0, 1)
            if k == 2:
                return v[..., :0] if v.dim() else v
            if k == 3:
                return v.to(dt[data.draw(dtype_name)])
            if k == 4 and v.dim():
                return v[..., :1].expand(v.shape)
            return v
        if isinstance(v, bool):
            return data.draw(st.one_of(st.booleans(), junk))
        if isinstance(v, int):
            return data.draw(st.one_of(st.just(v), any_int, junk))
        if isinstance(v, float):
            return data.draw(st.one_of(st.just(v), st.sampled_from(SPECIAL_FLOATS), junk))
        if isinstance(v, (list, tuple)) and depth < 2:
            return type(v)(mutate(data, u, depth + 1) for u in v)
        return data.draw(st.one_of(st.just(v), junk)) if data.draw(st.integers(0, 5)) == 0 else v

    def t_registry(data):
        if not entries:
            return None
        e = data.draw(st.sampled_from(entries))
        d = dt.get(data.draw(st.sampled_from(list(e.dtypes) or ["float32"])), ember.float32)
        try:
            samples = list(e.samples("cpu", d))
        except ALLOWED:
            return None
        if not samples:
            return None
        s = data.draw(st.sampled_from(samples))
        args = tuple(s.args)
        kwargs = dict(s.kwargs)
        if data.draw(st.integers(0, 3)):
            if args:
                i = data.draw(st.integers(0, len(args) - 1))
                args = args[:i] + (mutate(data, args[i]),) + args[i + 1:]
            if kwargs and data.draw(st.booleans()):
                k = data.draw(st.sampled_from(sorted(kwargs)))
                kwargs[k] = mutate(data, kwargs[k])
        return call(e.name, e.op, *args, **kwargs)

    targets = [t_factories, t_views, t_reductions, t_indexing, t_join, t_matmul, t_elementwise,
               t_registry]
    deadline = time.monotonic() + seconds
    rounds = calls = 0
    rng = random.Random(seed)
    print(f"fuzz: seed {seed}, {seconds:.0f} s, {len(entries)} registry entries, "
          f"{len(opinfo.op_db)} elementwise ops", flush=True)
    while time.monotonic() < deadline:
        target = targets[rounds % len(targets)]
        round_seed = rng.randrange(2**32)

        def make_body(target):
            def body(data):
                nonlocal calls
                calls += 1
                target(data)
            return body

        test = settings(max_examples=25, deadline=None, database=None, derandomize=False,
                        suppress_health_check=list(HealthCheck), print_blob=True)(
            given(data=st.data())(make_body(target)))
        try:
            hseed(round_seed)(test)()
        except Exception:
            traceback.print_exc()
            print(f"fuzz: FAILED in {target.__name__} (base seed {seed}, round {rounds}, "
                  f"round seed {round_seed}); rerun with EMBER_FUZZ_SEED={seed}", flush=True)
            return 1
        rounds += 1
    print(f"fuzz: ok, {calls} calls in {rounds} rounds", flush=True)
    return 0


def _limit_memory():
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        return  # ASan reserves terabytes of shadow: its max_allocation_size_mb caps instead
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


# ---- the test ------------------------------------------------------------------------------

def test_fuzz_public_api(tmp_path):
    seconds = float(os.environ.get("EMBER_FUZZ_SECONDS", "20"))
    # A fixed default keeps CI reproducible; EMBER_FUZZ_SEED=random explores.
    seed_env = os.environ.get("EMBER_FUZZ_SEED", "0")
    seed = random.randrange(2**31) if seed_env == "random" else int(seed_env)
    from child_env import child_env
    env = child_env()
    if "asan" in env.get("LD_PRELOAD", ""):
        env["ASAN_OPTIONS"] = ":".join(filter(None, [
            env.get("ASAN_OPTIONS", ""), "allocator_may_return_null=1",
            f"max_allocation_size_mb={MEMORY_LIMIT >> 20}"]))
    last_call = tmp_path / "last_call.txt"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", str(seconds), str(seed),
           str(last_call)]
    limit = seconds * 2 + CALL_TIMEOUT * 2 + 120
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if isinstance(e.output, bytes) else (e.output or "")
        pytest.fail(f"fuzz (EMBER_FUZZ_SEED={seed}) hung past {limit:.0f} s in\n"
                    f"  {_read(last_call)}\n{out[-20000:]}")
    print(p.stdout[-3000:])
    if p.returncode != 0:
        pytest.fail(f"fuzz (EMBER_FUZZ_SEED={seed}) failed with exit code {p.returncode}; "
                    f"last call:\n  {_read(last_call)}\n" + p.stdout[-30000:])
    assert "fuzz: ok" in p.stdout


def _read(path):
    try:
        return path.read_text()[:4000]
    except OSError:
        return "(none recorded)"


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--child":
    _limit_memory()
    sys.exit(_child_main(float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
