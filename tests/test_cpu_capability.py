"""CPU capability dispatch (Note [CPU capability dispatch] in CMakeLists.txt): the hot
elementwise, reduction, loss, pooling, recurrent, norm and optimizer kernels are compiled for baseline x86-64, AVX2 and
AVX-512 and one copy is chosen at startup; EMBER_CPU_CAPABILITY lowers the choice.

Each capability runs in its own interpreter (the choice is made once, at load) and
must compute what the others do."""
import json
import subprocess
import sys

import numpy as np
import pytest
from child_env import child_env

from ember.backends import cpu as ember_cpu

ORDER = ["default", "avx2", "avx512"]
# not resolve(): a staged package (tools/sanitize.sh) is a tree of symlinks

_PROBE = r"""
import json, sys
import numpy as np
import ember
import ember.optim
from ember.backends import cpu
rng = np.random.default_rng(0)
out = {"capability": cpu.get_cpu_capability(), "supported": cpu._get_supported_cpu_capability(),
       "compiled": cpu._compiled_cpu_capabilities()}
f32 = rng.standard_normal(1000).astype(np.float32)
f64 = rng.standard_normal((37, 29))
i64 = rng.integers(-2**62, 2**62, 777, dtype=np.int64)
i32 = rng.integers(-1000, 1000, (13, 17), dtype=np.int32)
a, b = ember.from_numpy(f32), ember.from_numpy(f32[::-1].copy())
d = ember.from_numpy(f64)
n, m = ember.from_numpy(i64), ember.from_numpy(i32)
h = a.to(ember.float16)
sa = ember.from_numpy(rng.standard_normal((5, 13, 17)).astype(np.float32))
sb = ember.from_numpy(rng.standard_normal((5, 21, 17)).astype(np.float32))
res = {
    "bmm": ember.bmm(sa, sb.transpose(1, 2)), "mmd": d[:13, :17] @ d[:17, 3:24],
    "add": (a + b), "mul": (a * b), "exp": a.exp(), "sigmoid": a.sigmoid(), "div": (a / (b.abs() + 1)),
    "addd": (d + d.t().reshape(37, 29)), "sqrtd": d.abs().sqrt(), "max2": ember.maximum(a, b),
    "iadd": (n + n), "imul": (n * 3), "ifloordiv": (n // 7), "iabs": n.abs(), "ineg": -m,
    "cmp": (a > b), "hadd": (h + h).float(),
    "sum": a.sum(), "sumd0": d.sum(0), "sumd1": d.sum(1), "mean": d.mean(), "isum": n.sum(),
    "imsum": m.sum(1), "prod": m[:2, :3].prod(), "amax": a.amax(), "argmax": d.argmax(1),
    "min": d.min(0).values, "cumsum": m.cumsum(1), "var": d.var(1), "std": a.std(),
    "norm": d.norm(), "all": (n != 0).all(), "strided": d[:, ::3].sum(0),
    "hsum": h.sum().float(),
}
# The nn families compiled per capability too: losses, pooling, the recurrent kernels.
F = ember.nn.functional
xr = ember.from_numpy(rng.standard_normal((7, 33)).astype(np.float32)).requires_grad_()
yr = ember.from_numpy(rng.integers(0, 33, 7))
F.cross_entropy(xr, yr).backward()
res["ce_grad"] = xr.grad
res["nll"] = F.nll_loss(xr.detach(), yr, reduction="none")
im = ember.from_numpy(rng.standard_normal((2, 3, 9, 11)).astype(np.float32)).requires_grad_()
F.max_pool2d(im, 2).sum().backward()
res["maxpool"] = F.max_pool2d(im.detach(), 3, stride=1)
res["maxpool_grad"] = im.grad
res["avgpool"] = F.avg_pool2d(im.detach(), 2)
ember.manual_seed(0)
lstm, gru = ember.nn.LSTM(5, 19), ember.nn.GRU(5, 19)
seq = ember.from_numpy(rng.standard_normal((4, 3, 5)).astype(np.float32)).requires_grad_()
lstm(seq)[0].sum().backward()
res["lstm"] = lstm(seq)[0].detach()
res["lstm_grad"] = seq.grad
res["gru"] = gru(seq)[0].detach()
ln, bn = ember.nn.LayerNorm(33), ember.nn.BatchNorm2d(3)
res["layernorm"] = ln(xr.detach())
res["batchnorm"] = bn(im.detach())
p = ember.from_numpy(rng.standard_normal(300).astype(np.float32)).requires_grad_()
p.grad = ember.from_numpy(rng.standard_normal(300).astype(np.float32))
opt = ember.optim.AdamW([p], lr=0.1)
opt.step()
opt.step()
res["adamw"] = p.detach()
out["results"] = {k: v.tolist() for k, v in res.items()}
print(json.dumps(out))
"""


def _run(capability):
    env = child_env()
    if capability is None:
        env.pop("EMBER_CPU_CAPABILITY", None)
    else:
        env["EMBER_CPU_CAPABILITY"] = capability
    p = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, f"EMBER_CPU_CAPABILITY={capability}:\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_capability_is_reported():
    cap = ember_cpu.get_cpu_capability()
    assert cap in ORDER
    sup = ember_cpu._get_supported_cpu_capability()
    assert sup in ORDER
    assert ORDER.index(cap) <= ORDER.index(sup)


def test_results_agree_across_capabilities():
    base = _run(None)
    supported = base["supported"]
    assert base["capability"] in ORDER
    compiled = base["compiled"]
    assert "default" in compiled
    if platform_is_x86() and len(compiled) > 1:
        assert compiled == ORDER  # EMBER_CPU_DISPATCH=ON (the default) compiles all three

    def expected(cap):  # the best compiled capability not above `cap` nor the CPU's
        top = min(ORDER.index(cap), ORDER.index(supported))
        return max((c for c in compiled if ORDER.index(c) <= top), key=ORDER.index)

    assert base["capability"] == expected("avx512")  # unforced: the best there is
    runs = {}
    for cap in ORDER:
        r = _run(cap)
        assert r["capability"] == expected(cap), (cap, r["capability"], supported, compiled)
        runs[cap] = r
    ref = runs["default"]["results"]
    for cap, r in runs.items():
        for k, v in r["results"].items():
            e = ref[k]
            a_arr, e_arr = np.asarray(v), np.asarray(e)
            if a_arr.dtype.kind in "iub":
                np.testing.assert_array_equal(a_arr, e_arr, err_msg=f"{k} under {cap}")
            else:
                # FMA contraction may change the last bit of float results
                np.testing.assert_allclose(a_arr, e_arr, rtol=2e-6, atol=1e-6,
                                           err_msg=f"{k} under {cap}")


def platform_is_x86():
    import platform
    return platform.machine() in ("x86_64", "AMD64")


def test_bad_value_is_ignored():
    base = _run(None)
    r = _run("sse9000")
    assert r["capability"] == base["capability"]


def test_results_match_numpy_under_default():
    r = _run("default")["results"]
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal(1000).astype(np.float32)
    f64 = rng.standard_normal((37, 29))
    i64 = rng.integers(-2**62, 2**62, 777, dtype=np.int64)
    np.testing.assert_allclose(r["add"], f32 + f32[::-1], rtol=1e-6)
    np.testing.assert_allclose(r["sumd0"], f64.sum(0), rtol=1e-12)
    assert r["iadd"] == (i64 + i64).tolist()
    assert r["ifloordiv"] == (i64 // 7).tolist()
    assert r["argmax"] == f64.argmax(1).tolist()


@pytest.mark.skipif(not platform_is_x86(), reason="capabilities are x86-64 instruction sets")
def test_forcing_higher_than_supported_is_capped():
    sup = ember_cpu._get_supported_cpu_capability()
    r = _run("avx512")
    assert ORDER.index(r["capability"]) <= ORDER.index(sup)
