"""CUDA fusion kernels: the fusion groups of a graph whose tensors live on a GPU,
generated as CUDA C++ from the same program the CPU kernels come from, compiled at run
time with NVRTC and cached per device architecture (Note [CUDA fusion kernels]).

Note [CUDA fusion kernels]
A group's program (``_codegen.Program``) builds its statements through the same body
builders for both targets: every op's scalar expression, every backward rule and the
row statistics of a reduction are written once. Only the loops differ:
- elementwise: a grid-stride loop over the iteration shape's elements; when every
  operand is contiguous (``flat``) element i is operand index i, otherwise i is
  decomposed over the sizes into each operand's offset (the decomposition is unrolled
  here, per dimension, so everything stays in registers);
- a row kernel (a reduction over the last dimension with its producers and consumers:
  softmax, log_softmax, logsumexp, sum, mean, amax): one warp per row; each lane walks
  every 32nd element of the row, the warp combines the lanes' partial results with
  shuffles (``wsum``, ``wmax``, ``wamax``), and the row's outputs are written by lane 0.
The kernel is ``extern "C" __global__ ember_kernel(const EmberArgs a)`` where
``EmberArgs`` holds ``int64_t v[K]``: the operands' data pointers, the meta block of Note
[Generated kernel ABI] (flat, nd, sizes, each operand's broadcast strides), then the
number of work items (elements, or rows). K is fixed per kernel (operands and rank
are), at most 512 words: the 4 KiB of parameters every driver accepts; a bigger group
is not fused on CUDA. ``backends/cuda/fusion.cpp`` builds the block from the operands
(with the CPU runner's checks, ``kernels/fusion_args.h``) and launches 256-thread blocks
(128 for rows) on the current stream of the operands' device.

Compiling: NVRTC (``libnvrtc``, found as below) is loaded with dlopen by ``_C``; the
source includes ember's scalar functors (``kernels/functors.h``, the header eager's CUDA
kernels use) and ``<cmath>``, ``<cstdint>``, ``<limits>``, ``<type_traits>``: NVRTC has no
C++ standard library, so those names are handed to it as small in-memory headers that
map ``std::`` onto libcu++ (``cuda/std/...``, from the toolkit's ``include/cccl``). Each
image is a CUBIN for the device's ``sm_XY`` when this NVRTC knows that architecture, else
PTX for the newest one it knows (the driver finishes it). Images are cached on disk
beside the CPU kernels (Note [Kernel cache]), keyed by the source, the headers, NVRTC's
version and the architecture, so a second process only loads them. Without NVRTC or
libcu++ a CUDA graph's groups are left to eager (with a note in the fusion log).
"""
from __future__ import annotations

import glob
import hashlib
import os
import sys
import threading

from .. import _C

THREADS = 256  # backends/cuda/fusion.h: kFusionThreads
ROW_THREADS = 128  # kFusionRowThreads: four warps, a row each
MAX_ARG_WORDS = 512  # kFusionMaxArgBytes / 8

PRELUDE = """#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include "ember/kernels/functors.h"
#include "ember/kernels/philox.h"
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
using ember::opmath_t;
template <typename To, typename From>
__device__ __forceinline__ opmath_t<To> cv(From x) { return opmath_t<To>(To(x)); }
template <typename T>
__device__ __forceinline__ T sel(bool c, T a, T b) { return c ? a : b; }
template <typename T>
__device__ __forceinline__ T ex(T t) { return std::exp(t); }
// A warp's partial results combined; every lane gets the result.
template <typename T>
__device__ __forceinline__ T wsum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// softmax's row maximum: NaN is not taken here (it reaches the result through the sum)
template <typename T>
__device__ __forceinline__ T wmax(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    const T u = __shfl_xor_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  return v;
}
// amax: NaN wins, as eager's
template <typename T>
__device__ __forceinline__ T wamax(T v) {
  for (int o = 16; o > 0; o >>= 1) v = ember::fn::Maximum{}(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
"""

# NVRTC has no standard library: these stand in for the headers the sources include.
_STD_HEADERS = ("cmath", "cstdint", "limits", "type_traits", "cstring", "cstddef")


# What this libcu++ lacks of <cmath> (CUDA 13.0: erf, erfc, fmod, remainder) comes from the
# CUDA math library's global overloads, which NVRTC always has; a using-declaration in std
# is found before the names libcu++ brings in. copysign also takes mixed arguments (float,
# double), promoted to double as the C++ library's does (functors.h's digamma and erfinv).
_CMATH_EXTRA = """namespace std {
using ::erf; using ::erfc; using ::fmod; using ::remainder; using ::copysign;
template <class A, class B,
          class = ::cuda::std::enable_if_t<!::cuda::std::is_same<A, B>::value>>
__host__ __device__ inline double copysign(A a, B b) { return ::copysign(double(a), double(b)); }
}
"""


def _std_header(name):
    return (f"#pragma once\n#include <cuda/std/{name}>\n"
            "namespace std { using namespace ::cuda::std; }\n"
            + (_CMATH_EXTRA if name == "cmath" else ""))


def nargs(nops, nd):
    """Words in the argument block of a kernel with `nops` operands over `nd` dims."""
    return nops + 2 + nd + nops * nd + 1


def _head(prog, decls, nops, threads):
    nd = len(prog.shape)
    k = nargs(nops, nd)
    if k > MAX_ARG_WORDS:
        raise ValueError(f"ember.compile: a CUDA fusion group with {nops} operands over {nd} "
                         f"dimensions needs {k * 8} bytes of kernel parameters (at most "
                         f"{MAX_ARG_WORDS * 8})")
    src = [PRELUDE, f"struct EmberArgs {{ int64_t v[{k}]; }};",
           f'extern "C" __global__ void __launch_bounds__({threads}) '
           "ember_kernel(const EmberArgs a) {",
           f"  char* const p[{max(nops, 1)}] = {{"
           + ", ".join(f"(char*)a.v[{i}]" for i in range(nops)) + "};"]
    src += ["  " + d for d in decls]
    return src, k


def _size(prog, nops, d):
    return f"a.v[{nops + 2 + d}]"


def _stride(prog, nops, k, d):
    nd = len(prog.shape)
    return f"a.v[{nops + 2 + nd + k * nd + d}]"


def _decompose(prog, nops, var, dims, indent):
    """Lines turning the linear index `var` over `dims` (outermost first) into offN."""
    src = [f"{indent}int64_t rem = {var};"]
    src.append(indent + " ".join(f"int64_t off{k} = 0;" for k in range(nops)))
    for d in reversed(dims):
        src.append(f"{indent}{{ const int64_t s = {_size(prog, nops, d)}; "
                   "const int64_t c = rem % s; rem /= s;")
        for k in range(nops):
            src.append(f"{indent}  off{k} += c * {_stride(prog, nops, k, d)};")
        src.append(f"{indent}}}")
    return src


def flat_kernel(prog, decls, body_fn, nops):
    """An elementwise group's kernel: a grid-stride loop over the elements."""
    nd = len(prog.shape)
    src, k = _head(prog, decls, nops, THREADS)
    src.append(f"  const int64_t n = a.v[{k - 1}];")
    src.append("  const int64_t step = int64_t(gridDim.x) * blockDim.x;")
    src.append("  const int64_t i0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;")
    prog._lin = "i"
    src.append(f"  if (a.v[{nops}]) {{")
    src.append("    for (int64_t i = i0; i < n; i += step) {")
    src += ["      " + ln for ln in body_fn(lambda q: prog.flat_index(q, "i"))]
    src.append("    }")
    src.append("    return;")
    src.append("  }")
    src.append("  for (int64_t i = i0; i < n; i += step) {")
    src += _decompose(prog, nops, "i", list(range(nd)), "    ")
    src += ["    " + ln for ln in body_fn(lambda q: f"off{q}")]
    src.append("  }")
    src.append("}")
    prog._lin = None
    return "\n".join(src) + "\n"


def row_kernel(prog, decls, nops, body_fn):
    """A row group's kernel: a warp per row of the last dimension."""
    nd = len(prog.shape)
    src, k = _head(prog, decls, nops, ROW_THREADS)
    src.append("  const int lane = threadIdx.x & 31;")
    src.append(f"  const int64_t rows = a.v[{k - 1}];")
    src.append(f"  const int64_t L = {_size(prog, nops, nd - 1)};")
    src += [f"  const int64_t ls{q} = {_stride(prog, nops, q, nd - 1)};" for q in range(nops)]
    src.append("  const int64_t wstep = (int64_t(gridDim.x) * blockDim.x) >> 5;")
    src.append("  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; "
               "r < rows; r += wstep) {")
    src += _decompose(prog, nops, "r", list(range(nd - 1)), "    ")
    src += body_fn()
    src.append("  }")
    src.append("}")
    return "\n".join(src) + "\n"


class _Target:
    """Generates `prog`'s sources for CUDA inside the block."""

    def __init__(self, prog):
        self.prog = prog

    def __enter__(self):
        self.prev = self.prog.__dict__.get("target")
        self.prog.target = "cuda"
        return self.prog

    def __exit__(self, *exc):
        if self.prev is None:
            del self.prog.target
        else:
            self.prog.target = self.prev


def forward_source(prog, masks=False):
    with _Target(prog) as p:
        return p.forward_source(masks)


def backward_source(prog, grad_inputs, masks=False, scalar_gouts=None):
    with _Target(prog) as p:
        return p.backward_source(list(grad_inputs), masks, scalar_gouts)


# ---- NVRTC ---------------------------------------------------------------------------------
_lock = threading.Lock()
_state = {}  # "nvrtc": path or Exception, "cccl": dir, "archs": [...], "version": (maj, min)
_images = {}  # (key) -> handle


def _cuda_homes():
    homes = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    homes += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for sp in sys.path:  # the nvidia-* wheels (nvidia/cu13, nvidia/cuda_nvrtc, ...)
        nv = os.path.join(sp, "nvidia")
        if os.path.isdir(nv):
            homes += sorted(glob.glob(os.path.join(nv, "*")))
    seen, out = set(), []
    for h in homes:
        if h and os.path.isdir(h) and h not in seen:
            seen.add(h)
            out.append(h)
    return out


def _nvrtc_candidates():
    env = os.environ.get("EMBER_NVRTC")
    if env:
        return [env]
    c = []
    for h in _cuda_homes():
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            c += sorted(glob.glob(os.path.join(h, sub, "libnvrtc.so*")), reverse=True)
    c = [p for p in c if "builtins" not in os.path.basename(p) and ".alt." not in p]
    return c + ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]


def _cccl_dir():
    for h in _cuda_homes():
        for sub in ("include/cccl", "include", "targets/x86_64-linux/include/cccl"):
            d = os.path.join(h, sub)
            if os.path.exists(os.path.join(d, "cuda", "std", "cmath")):
                return d
    return None


def available():
    """(True, detail) when NVRTC and libcu++ are here, else (False, why)."""
    with _lock:
        if "nvrtc" not in _state:
            try:
                _state["nvrtc"] = _C._nvrtc_load(_nvrtc_candidates())
                _state["version"] = tuple(_C._nvrtc_version())
                _state["archs"] = list(_C._nvrtc_supported_archs())
            except RuntimeError as e:
                _state["nvrtc"] = e
            _state["cccl"] = _cccl_dir()
        if isinstance(_state["nvrtc"], Exception):
            return False, str(_state["nvrtc"])
        if _state["cccl"] is None:
            return False, ("ember.compile: libcu++ (cuda/std/cmath, the CUDA toolkit's "
                           "include/cccl) was not found; set CUDA_HOME")
        return True, f"NVRTC {_state['version']} ({_state['nvrtc']}), libcu++ {_state['cccl']}"


def _arch_for(cc):
    """(option, cubin?) for compute capability `cc` (e.g. 90)."""
    archs = _state["archs"]
    if cc in archs:
        return f"--gpu-architecture=sm_{cc}", True
    best = max([a for a in archs if a <= cc] or [min(archs)])
    return f"--gpu-architecture=compute_{best}", False


_header_files = None


def _headers():
    """The in-memory headers NVRTC gets: the std stand-ins and ember's functors."""
    global _header_files
    if _header_files is None:
        from . import _toolchain
        inc = _toolchain.include_dir()
        hs = [(n, _std_header(n)) for n in _STD_HEADERS]
        for rel in ("ember/kernels/functors.h", "ember/kernels/philox.h", "ember/core/half.h"):
            with open(os.path.join(inc, rel)) as f:
                hs.append((rel, f.read()))
        _header_files = hs
    return _header_files


def options(cc):
    arch, cubin = _arch_for(cc)
    opts = [arch, "--std=c++17", f"--include-path={_state['cccl']}", "-default-device", "-w"]
    if _state["version"] >= (12, 4):  # automatic precompiled headers: 1.7 s -> 0.2 s a kernel
        opts.append("--pch")
    return opts, cubin


def compile_image(source, cc, name="ember_fusion"):
    """NVRTC's image (CUBIN or PTX bytes) of `source` for compute capability `cc`, from the
    disk cache when a previous run built it."""
    ok, why = available()
    if not ok:
        raise RuntimeError(why)
    from . import _toolchain
    opts, cubin = options(cc)
    h = hashlib.sha256()
    for part in [source, *(t for _, t in _headers()), repr(_state["version"]), *opts]:
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:24]
    d = _toolchain.cache_dir()
    path = os.path.join(d, f"k_{key}.{'cubin' if cubin else 'ptx'}")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read(), path, True
    image, _log = _C._nvrtc_compile(source, name + ".cu", opts, _headers(), cubin)
    os.makedirs(d, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(image)
    os.replace(tmp, path)
    with open(path[: path.rindex(".")] + ".cu", "w") as f:
        f.write(source)
    return image, path, False


def load(source, nops, nd, device_index):
    """A launchable handle (ember._C_cuda) for `source` on cuda:`device_index`."""
    import ember.cuda
    cc = ember.cuda.get_device_capability(device_index)
    cc = cc[0] * 10 + cc[1]
    key = (hashlib.sha256(source.encode()).hexdigest(), cc)
    with _lock:
        hnd = _images.get(key)
    if hnd is not None:
        return hnd, None, True
    image, path, cached = compile_image(source, cc)
    from .. import _C_cuda
    hnd = _C_cuda._fusion_load(image, nargs(nops, nd))
    with _lock:
        _images[key] = hnd
    return hnd, path, cached
