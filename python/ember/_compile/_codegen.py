"""C++ source for a fusion group: one loop over the iteration shape that loads every
input once, computes the group's ops in registers through ember's scalar functors and
stores its results; and the backward loop, which recomputes the forward in registers
and runs the ops' backward rules in reverse (Note [Generated kernels]).

Note [Generated kernels]
A kernel follows Note [Generated kernel ABI] (python/compile.cpp). Its flat loop
(every operand contiguous over the iteration shape, or one element read once) is a
plain ``for`` the compiler vectorizes; the strided loop decomposes the start of each
run along the last dimension once and then walks that dimension with the operands'
strides. Values live in ``opmath_t`` registers (float for float16/bfloat16); every op
converts its operands to the dtype it computes in and rounds its result to its own
dtype, exactly as the eager kernel of that op would (Note [Fusible ops]), so results
match eager bit for bit whenever the compiler does not contract or reassociate (no
-ffast-math; -march=native may contract a*b+c into an FMA: within 1 ulp per op).
"""
from __future__ import annotations

import math

from . import _ops

PRELUDE = """#include <cmath>
@VECTOR_MATH@#include <cstdint>
#include <limits>
#include <type_traits>
@DRAWS@#include "ember/kernels/functors.h"
using ember::opmath_t;
template <typename To, typename From>
static inline opmath_t<To> cv(From x) { return opmath_t<To>(To(x)); }
// c ? a : b without a branch: GCC if-converts a ternary into a masked region, where
// libmvec's (notinbranch) vector functions cannot be called, so a select before an exp
// would keep the whole loop scalar.
template <typename T>
static inline T sel(bool c, T a, T b) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const U m = U(0) - U(c);
    U x, y;
    __builtin_memcpy(&x, &a, sizeof(T));
    __builtin_memcpy(&y, &b, sizeof(T));
    const U r = (x & m) | (y & ~m);
    T o;
    __builtin_memcpy(&o, &r, sizeof(T));
    return o;
  } else {
    return c ? a : b;
  }
}
// exp for the softmax passes: libmvec's vector exp takes a slow scalar path for lanes far
// below its range (the -inf of masked entries), so those lanes get exp of the bound and
// then an exact 0 (a true result there is below float's normal range anyway).
template <typename T>
static inline T ex(T t) {
  const T lo = sizeof(T) == 4 ? T(-87) : T(-708);
  return sel(t < lo, T(0), T(std::exp(sel(t < lo, lo, t))));
}
"""


def prelude(draws=False, buffers=False):
    """The includes and helpers of a CPU kernel. philox.h (with <immintrin.h>, a third of a
    second of parsing) and <vector> only for kernels that draw or keep row buffers."""
    from . import _toolchain
    extra = ("#include <vector>\n" if draws or buffers else "") + \
        ('#include "ember/kernels/philox.h"\n' if draws else "")
    return PRELUDE.replace("@VECTOR_MATH@", _toolchain.vector_math()).replace("@DRAWS@", extra)


def ctype(dt):
    return _ops.CTYPES[dt]


def literal(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return f"int64_t({x}LL)"
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    return repr(float(x))


def _dropout_scale(dt, p):
    """1 / (1 - p) as eager dropout's mask / (1 - p) computes it in `dt`."""
    import ember
    with ember.no_grad():
        return (ember.ones([], dtype=getattr(ember, dt)) / (1 - p)).item()


def _result_type(*xs):
    """The promoted dtype name of (dtype name, dims) pairs and Python numbers."""
    import ember
    args = [ember.empty([1] * x[1] if x[1] else [], dtype=getattr(ember, x[0]))
            if isinstance(x, tuple) else x for x in xs]
    return str(ember.result_type(args[0], args[1])).replace("ember.", "")


class Program:
    """A group as straight-line scalar code: inputs (dtype, scalar?), steps, outputs."""

    def __init__(self, group, shape_of):
        self.shape = list(group.shape)
        self.inputs = []  # (value, dtype, sizes)
        self.in_index = {}
        self.steps = []  # (dtype od, op, operands[(kind, ref)], compute dtype cd)
        self.val_index = {}  # node output value -> step index
        self.dropouts = []  # steps that draw (in graph order)
        for n, (op, operands, out) in zip(group.nodes, group.desc):
            refs = []
            for kind, x in operands:
                if kind == "c":
                    refs.append(("c", x))
                elif x in self.val_index:
                    refs.append(("s", self.val_index[x]))
                else:
                    if x not in self.in_index:
                        self.in_index[x] = len(self.inputs)
                        dt, sizes = shape_of(x)
                        self.inputs.append((x, dt, sizes))
                    refs.append(("i", self.in_index[x]))
            od = out[0]
            cd = self._compute_dtype(op, refs, od)
            self.val_index[n.output(0)] = len(self.steps)
            if op["kind"] == "dropout":
                self.dropouts.append(len(self.steps))
            self.steps.append((od, op, refs, cd))
        # each dropout reads its generator's (seed, first block) as two 0-d int64 operands
        # after the group's own inputs (Note [Fused dropout]); they stand for no graph value
        self.n_graph_inputs = len(self.inputs)
        self.rng = {}
        for s in self.dropouts:
            self.rng[s] = (len(self.inputs), len(self.inputs) + 1)
            self.inputs += [(None, "int64", []), (None, "int64", [])]
        self.outputs = []  # step indices whose value leaves the group

    def dtype_of(self, ref):
        kind, x = ref
        if kind == "i":
            return self.inputs[x][1]
        if kind == "s":
            return self.steps[x][0]
        return None

    def _operand_for_promotion(self, ref):
        kind, x = ref
        if kind == "c":
            return x
        dt = self.dtype_of(ref)
        nd = len(self.inputs[x][2]) if kind == "i" else len(self.shape)
        return (dt, nd)

    def _compute_dtype(self, op, refs, od):
        cls = op.get("cls")
        if op["kind"] == "binary" and cls == "COMPARE":
            return _result_type(*(self._operand_for_promotion(r) for r in refs))
        if op["kind"] == "binary" and cls == "LOGICAL":
            return "bool"
        if op["kind"] == "unary" and cls == "PRED":
            return self.dtype_of(refs[0])
        return od

    # ---- code --------------------------------------------------------------------------
    def _load(self, k, idx):
        dt = self.inputs[k][1]
        if dt == "bool":  # a byte test: GCC keeps a loaded bool's select as control flow
            return f"(((const uint8_t*)in{k})[{idx}] != 0)"
        return f"opmath_t<{ctype(dt)}>(in{k}[{idx}])"

    def _ref(self, ref, cd, regs):
        kind, x = ref
        if kind == "c":
            if cd == "bool":
                return "true" if x else "false"
            return f"opmath_t<{ctype(cd)}>({literal(x)})"
        return f"cv<{ctype(cd)}>({regs[ref]})"

    def forward_body(self, idx, upto=None, red_expr=None):
        """Statements computing the steps before `upto` (all by default); idx(k) is input
        k's index expression; red_expr(refs) gives the reduction step's value."""
        lines = []
        regs = {}
        for k, (_, dt, _) in enumerate(self.inputs):
            lines.append(f"const opmath_t<{ctype(dt)}> x{k} = {self._load(k, idx(k))};")
            regs[("i", k)] = f"x{k}"
        for s, (od, op, refs, cd) in enumerate(self.steps):
            if upto is not None and s >= upto:
                break
            if op["kind"] == "reduce":
                e = red_expr(refs, regs)
            elif op["kind"] == "dropout":
                lines.append(f"const opmath_t<{ctype(od)}> m{s} = {self._keep(s, idx)};")
                e = f"cv<{ctype(od)}>({self._ref(refs[0], od, regs)} * m{s})"
            else:
                e = self._expr(op, refs, cd, od, regs)
            lines.append(f"const opmath_t<{ctype(od)}> v{s} = {e};")
            regs[("s", s)] = f"v{s}"
        return lines, regs

    # Note [Fused dropout]
    # Eager dropout(x, p) fills a mask with bernoulli_(1 - p), two elements a Philox block
    # from blocks it reserves on the default generator, and returns x * (mask / (1 - p)).
    # A fused dropout reserves the same blocks when its kernel runs (the runner passes the
    # (seed, first block) pair as two int64 operands) and recomputes element i's draw from
    # (seed, first block, i), i its linear index over the iteration shape (the order of the
    # eager mask): philox::bernoulli53 is the eager kernel's test. mask / (1 - p) is a
    # constant per dtype, taken from eager's own division. So a compiled dropout equals the
    # eager one bit for bit and leaves the generator where eager leaves it, provided the
    # draws keep their graph order: groups that draw never merge, a random op closes them,
    # and the rewrite places them between the random ops around them (_runtime.py). The
    # backward recomputes the mask from the saved pair; no mask is stored.
    RUN = 512  # elements a CPU kernel draws for at once
    _lin = None  # CUDA: the current element's linear index (set by the loop builders)
    _mb = None  # CPU: the current element's index in the multiplier buffers

    def _drop_params(self, s):
        od, op, _, _ = self.steps[s]
        p = op["p"]
        thr = math.ceil((1 - p) * 2.0 ** 53)  # exact: as eager's bernoulli_ kernel
        return f"opmath_t<{ctype(od)}>", thr, literal(_dropout_scale(od, p))

    _mask_ops = None  # backward from saved masks: dropout step -> its mask operand

    def _keep(self, s, idx):
        """The multiplier m of dropout step s: mask / (1 - p) of the current element: read
        from the forward's saved mask, or drawn (on the CPU a run of them at once into a
        buffer, _fill_draws)."""
        t, thr, scale = self._drop_params(s)
        if self._mask_ops:
            k = self._mask_ops[s]
            return f"sel(mk{s}[{idx(k)}] != 0, {t}({scale}), {t}(0))"
        if self.target != "cuda":
            if self._mb is None:
                raise AssertionError("a dropout outside a loop that draws")
            return f"mb{s}[{self._mb}]"
        ks, ko = self.rng[s]
        return (f"sel(ember::philox::bernoulli53(uint64_t({self._load(ks, '0')}), "
                f"uint64_t({self._load(ko, '0')}), {self._lin}, uint64_t({thr}ULL)), "
                f"{t}({scale}), {t}(0))")

    def _draw_buffers(self, size):
        """Declarations of the CPU kernel's multiplier buffers (`size` elements each)."""
        if self._mask_ops:
            return []
        return [f"std::vector<opmath_t<{ctype(self.steps[s][0])}>> "
                f"mb{s}(static_cast<size_t>({size}));" for s in self.dropouts]

    def _fill_draws(self, lin0, n):
        """Lines drawing the multipliers of elements lin0 .. lin0 + n - 1 into the buffers."""
        out = []
        if self._mask_ops:
            return out
        for s in self.dropouts:
            t, thr, scale = self._drop_params(s)
            ks, ko = self.rng[s]
            out.append(f"ember::philox::bernoulli53_fill<{t}>(uint64_t(in{ks}[0]), "
                       f"uint64_t(in{ko}[0]), {lin0}, {n}, uint64_t({thr}ULL), {t}({scale}), "
                       f"{t}(0), mb{s}.data());")
        return out

    @property
    def red(self):
        for s, (_, op, _, _) in enumerate(self.steps):
            if op["kind"] == "reduce":
                return s
        return None

    def row_outputs(self):
        """Output positions whose value has one element per row (sum-type reductions)."""
        R = self.red
        if R is None or self.steps[R][1]["name"] in ("softmax", "log_softmax", "layer_norm"):
            return []
        return [j for j, s in enumerate(self.outputs) if s == R]

    def _row_head(self, decls, nops, unit):
        """The kernel's start: pointers, whether every operand's last-dimension stride is
        the one the unit-stride body assumes (`unit`: 1, or 0 for a broadcast), then per
        row its operand offsets."""
        nd = len(self.shape)
        src = [prelude(bool(self.dropouts) and not self._mask_ops, bool(self._partial)),
               'extern "C" void ember_kernel(char* const* p, const int64_t* meta, '
               "int64_t begin, int64_t end) {"]
        src += ["  " + d for d in decls]
        src.append(f"  const int64_t* sz = meta + 2; const int64_t* st = meta + 2 + {nd};")
        src.append(f"  const int64_t L = sz[{nd - 1}];")
        conds = " && ".join(f"st[{k} * {nd} + {nd - 1}] == {e}" for k, e in enumerate(unit))
        src.append(f"  const bool unit = {conds or 'true'};")
        src.append("  for (int64_t r = begin; r < end; ++r) {")
        src.append(f"    int64_t off[{nops}] = {{0}};")
        src.append("    int64_t rem = r;")
        src.append(f"    for (int d = {nd - 2}; d >= 0; --d) {{")
        src.append("      const int64_t c = rem % sz[d]; rem /= sz[d];")
        src.append(f"      for (int k = 0; k < {nops}; ++k) off[k] += c * st[k * {nd} + d];")
        src.append("    }")
        return src

    def _row_idx(self, k):
        nd = len(self.shape)
        if self.target == "cuda":
            return f"off{k} + j * ls{k}"
        if self._unit is not None:
            return f"off[{k}] + j" if self._unit[k] else f"off[{k}]"
        return f"off[{k}] + j * st[{k} * {nd} + {nd - 1}]"

    _unit = None
    target = "cpu"  # or "cuda": _cuda.py generates through the same body builders

    def _off(self, k):
        """Operand k's offset at the start of the current row."""
        return f"off{k}" if self.target == "cuda" else f"off[{k}]"

    def _jloop(self):
        """The head of a loop over the row's elements: all of them on the CPU, one lane's
        share of them in a CUDA warp."""
        if self.target == "cuda":
            return "    for (int64_t j = lane; j < L; j += 32) {"
        return "    for (int64_t j = 0; j < L; ++j) {"

    def _warp(self, var, how):
        """On CUDA, combines the lanes' partial `var` across the warp (every lane gets it)."""
        if self.target != "cuda":
            return []
        return [f"    {var} = {how}({var});"]

    def _input_units(self):
        return [0 if not sizes or sizes[-1] == 1 else 1 for _, _, sizes in self.inputs]

    def _simd(self, clause=""):
        return [f"    #pragma omp simd {clause}".rstrip()] if self._unit is not None else []

    def _both(self, body_fn, unit):
        """body_fn() twice: for unit last-dimension strides, and for any strides."""
        src = ["    if (unit) {"]
        self._unit = unit
        try:
            src += ["  " + ln for ln in body_fn()]
        finally:
            self._unit = None
        src.append("    } else {")
        src += ["  " + ln for ln in body_fn()]
        src.append("    }")
        return src

    def _row_stats(self):
        """Lines (inside the row loop) computing the reduction's row statistics, and
        red_expr for the reduction step's value inside a later pass."""
        R = self.red
        od, op, refs, cd = self.steps[R]
        name = op["name"]
        cc = ctype(cd)
        acc = "double" if name in ("sum", "mean") else f"opmath_t<{cc}>"
        idx = self._row_idx

        def x_of(regs):
            return f"cv<{cc}>({regs[refs[0]]})" if refs[0][0] != "c" else literal(refs[0][1])
        if name == "layer_norm":
            return self._layer_norm_stats(x_of, od, refs, cc)
        src = []
        init = "0" if name in ("sum", "mean") else \
            f"-std::numeric_limits<opmath_t<{cc}>>::infinity()"
        src.append(f"    {acc} acc = {init};")
        if name in ("sum", "mean"):
            src += self._simd("reduction(+:acc)")
        elif name != "amax":
            src += self._simd("reduction(max:acc)")
        src.append(self._jloop())
        body, regs = self.forward_body(idx, upto=R)
        src += ["      " + ln for ln in body]
        if name in ("sum", "mean"):
            src.append(f"      acc += double({x_of(regs)});")
        elif name == "amax":
            src.append(f"      acc = ember::fn::Maximum{{}}(acc, {x_of(regs)});")
        else:  # a NaN reaches the results through the sum of exponentials
            src.append(f"      {{ const opmath_t<{cc}> xv = {x_of(regs)}; "
                       "acc = xv > acc ? xv : acc; }")
        src.append("    }")
        src += self._warp("acc", {"sum": "wsum", "mean": "wsum", "amax": "wamax"}.get(name, "wmax"))
        if name in ("softmax", "log_softmax", "logsumexp"):
            src.append(f"    const opmath_t<{cc}> mx = acc;")
            src.append(f"    const opmath_t<{cc}> sh = std::isinf(mx) ? opmath_t<{cc}>(0) : mx;")
            src.append(f"    opmath_t<{cc}> se = 0;")
            src += self._simd("reduction(+:se)")
            src.append(self._jloop())
            body, regs = self.forward_body(idx, upto=R)
            src += ["      " + ln for ln in body]
            src.append(f"      se += ex({x_of(regs)} - sh);")
            src.append("    }")
            src += self._warp("se", "wsum")
        row = {"sum": "acc", "mean": "acc / double(L)", "amax": "acc",
               "logsumexp": "sh + std::log(se)"}.get(name)
        if row is not None:
            src.append(f"    const opmath_t<{ctype(od)}> vrow = cv<{ctype(od)}>({row});")

        def red_expr(rrefs, regs):
            x = x_of(regs)
            if name == "softmax":
                return f"cv<{ctype(od)}>(ex({x} - sh) / se)"
            if name == "log_softmax":
                return f"cv<{ctype(od)}>({x} - sh - std::log(se))"
            return "vrow"
        return src, red_expr, x_of

    # Note [Fused layer_norm]
    # layer_norm over the last dimension is a row reduction with two statistics: per row, a
    # pass sums x and a second sums (x - mean)^2, both in double as eager's kernel does
    # (nn_norm.cpp), then y = (x - mean) * rstd * w + b in opmath, eager's formula, with the
    # weight and bias read along the row (inputs of one value per column). Its backward is
    # eager's too: with gh = g * w and xh = (x - mean) * rstd, a pass sums gh and gh * xh
    # over the row, and gx = rstd * (gh - mean(gh) - xh * mean(gh * xh)); the weight's and
    # bias's gradients (g * xh, g) are sums over the rows (Note [Row partial sums]). Where a
    # gradient flows these groups form only with config.fuse_reductions_with_grad: the
    # backward recomputes the statistics and writes each input's gradient, and still loses
    # to eager's.
    def _layer_norm_stats(self, x_of, od, refs, cc):
        idx = self._row_idx
        R = self.red
        def summed(var, update):
            """A pass over the row: double `var` += update(regs), combined across lanes."""
            out = [f"    double {var} = 0;"] + self._simd(f"reduction(+:{var})")
            out.append(self._jloop())
            body, regs = self.forward_body(idx, upto=R)
            out += ["      " + ln for ln in body] + ["      " + update(regs), "    }"]
            return out + self._warp(var, "wsum")
        src = summed("acc", lambda regs: f"acc += double({x_of(regs)});")
        src.append("    const double mu = acc / double(L);")
        src += summed("q", lambda regs: f"{{ const double d = double({x_of(regs)}) - mu; "
                                        "q += d * d; }")
        eps = literal(self.steps[R][1]["eps"])
        src.append(f"    const opmath_t<{cc}> amu = opmath_t<{cc}>(mu), "
                   f"ars = opmath_t<{cc}>(1.0 / std::sqrt(q / double(L) + {eps}));")

        def red_expr(rrefs, regs):
            e = f"({x_of(regs)} - amu) * ars"
            if refs[1][0] != "c":
                e += f" * {self._ref(refs[1], self.steps[R][3], regs)}"
            if refs[2][0] != "c":
                e += f" + {self._ref(refs[2], self.steps[R][3], regs)}"
            return f"cv<{ctype(od)}>({e})"
        return src, red_expr, x_of

    def row_source(self, masks=False):
        """A kernel over rows (the last dimension) for a group with a reduction; with
        `masks`, it also writes its dropouts' masks (as forward_source)."""
        R = self.red
        od = self.steps[R][0]
        n_in, n_out = len(self.inputs), len(self.outputs)
        n_m = len(self.dropouts) if masks else 0
        nops = n_in + n_out + n_m
        decls = [f"const {ctype(dt)}* __restrict__ in{k} = (const {ctype(dt)}*)p[{k}];"
                 for k, (_, dt, _) in enumerate(self.inputs)]
        decls += [f"{ctype(self.steps[s][0])}* __restrict__ out{j} = "
                  f"({ctype(self.steps[s][0])}*)p[{n_in + j}];"
                  for j, s in enumerate(self.outputs)]
        decls += [f"uint8_t* __restrict__ mko{j} = (uint8_t*)p[{n_in + n_out + j}];"
                  for j in range(n_m)]
        idx = self._row_idx
        row_outs = set(self.row_outputs())
        unit = self._input_units() + [0 if j in row_outs else 1 for j in range(n_out)] + \
            [1] * n_m
        full_outs = [j for j in range(n_out) if j not in row_outs]

        def body_fn():
            stats, red_expr, _ = self._row_stats()
            src = list(stats)
            if full_outs or n_m:
                src += self._simd()
                src.append(self._jloop())
                body, regs = self.forward_body(idx, red_expr=red_expr)
                src += ["      " + ln for ln in body]
                for j in full_outs:
                    s_ = self.outputs[j]
                    src.append(f"      out{j}[{idx(n_in + j)}] = "
                               f"{ctype(self.steps[s_][0])}(v{s_});")
                for j in range(n_m):
                    src.append(f"      mko{j}[{idx(n_in + n_out + j)}] = "
                               f"uint8_t(m{self.dropouts[j]} != 0);")
                src.append("    }")
            lead = "if (lane == 0) " if self.target == "cuda" else ""
            for j in row_outs:
                src.append(f"    {lead}out{j}[{self._off(n_in + j)}] = {ctype(od)}(vrow);")
            return src
        return self._row_kernel(decls, nops, unit, body_fn)

    def _row_kernel(self, decls, nops, unit, body_fn):
        self._lin = "(r * L + j)"  # r: the row, j: the element in it (both targets)
        self._mb = "j"
        try:
            if self.target == "cuda":
                from . import _cuda
                return _cuda.row_kernel(self, decls, nops, body_fn)
            src = self._row_head(decls, nops, unit)
            at = next(i for i, ln in enumerate(src) if ln.startswith("  for (int64_t r"))
            if self.dropouts:  # a row's draws first (every pass reads them)
                src[at:at] = ["  " + ln for ln in self._draw_buffers("L")]
                src += ["    " + ln for ln in self._fill_draws("r * L", "L")]
            for j, t in self._partial:  # Note [Row partial sums]
                src.insert(at, f"  std::vector<{t}> pa{j}(static_cast<size_t>(L));")
            src += self._both(body_fn, unit)
            src.append("  }")
            for j, _ in self._partial:
                src.append(f"  for (int64_t j = 0; j < L; ++j) pg{j}[slot * L + j] = pa{j}[j];")
            src.append("}")
            return "\n".join(src) + "\n"
        finally:
            self._lin = self._mb = None

    def _backward_pointers(self, grad_inputs):
        """The backward kernel's pointer declarations: the group's inputs, the gradients of
        its outputs, then the gradients it writes (one per input in `grad_inputs`)."""
        n_in, n_out = len(self.inputs), len(self.outputs)
        decls = [f"const {ctype(dt)}* __restrict__ in{k} = (const {ctype(dt)}*)p[{k}];"
                 for k, (_, dt, _) in enumerate(self.inputs)]
        decls += [f"const {ctype(self.steps[s][0])}* __restrict__ gout{j} = "
                  f"(const {ctype(self.steps[s][0])}*)p[{n_in + j}];"
                  for j, s in enumerate(self.outputs)]
        decls += [f"{ctype(self.inputs[k][1])}* __restrict__ gin{j} = "
                  f"({ctype(self.inputs[k][1])}*)p[{n_in + n_out + j}];"
                  for j, k in enumerate(grad_inputs)]
        return decls

    # Note [Row partial sums]
    # A row group's input that is the same along the rows (a layer_norm weight, a bias of one
    # value per column) gets the sum over the rows of its per-element gradient. Written per
    # element and then summed (sum_to_size), that is a full-size buffer written and read
    # again; instead the CPU kernel sums its range of rows into a local row and stores it as
    # slot begin / chunk of a [chunks, L] buffer (the runner starts ranges at multiples of
    # `chunk`, read from an int64 operand after the masks), and the runner adds the slots.
    _partial = ()  # (position in grad_inputs, opmath type) summed per range of rows

    def row_backward_source(self, grad_inputs, masks=False, scalar_gouts=None, partial=()):
        """The backward of a row group (Note [Fused backward]): per row the forward's
        statistics, a pass that runs the backward of the steps after the reduction and
        reduces what the reduction's backward needs (softmax: sum(g*y); log_softmax and
        sum-type: sum(g); layer_norm: sum(g*w), sum(g*w*xh)), then a pass through every
        step's backward. With `masks`, the dropouts' masks follow the gradients."""
        n_in, n_out, n_g = len(self.inputs), len(self.outputs), len(grad_inputs)
        n_m = len(self.dropouts) if masks else 0
        nops = n_in + n_out + n_g + n_m
        decls = self._backward_pointers(grad_inputs)
        decls += [f"const uint8_t* __restrict__ mk{s} = "
                  f"(const uint8_t*)p[{n_in + n_out + n_g + j}];"
                  for j, s in enumerate(self.dropouts[:n_m])]
        row_outs = set(self.row_outputs())
        sg = list(scalar_gouts or [False] * n_out)  # one element: stride 0 along the row
        unit = self._input_units() + [0 if j in row_outs or sg[j] else 1 for j in range(n_out)] \
            + [0 if j in partial else 1 for j in range(n_g)] + [1] * n_m
        if partial:
            nops += 1
            unit.append(0)
            for j in partial:
                t = f"opmath_t<{ctype(self.inputs[grad_inputs[j]][1])}>"
                decls.append(f"{t}* __restrict__ pg{j} = ({t}*)p[{n_in + n_out + j}];")
            decls.append(f"const int64_t slot = begin / *(const int64_t*)p[{nops - 1}];")
        self._mask_ops = {s: n_in + n_out + n_g + j for j, s in enumerate(self.dropouts[:n_m])}
        self._partial = tuple((j, f"opmath_t<{ctype(self.inputs[grad_inputs[j]][1])}>")
                              for j in partial)
        try:
            return self._row_kernel(decls, nops, unit,
                                    lambda: self._row_backward_body(grad_inputs, row_outs))
        finally:
            self._mask_ops = None
            self._partial = ()

    def _row_backward_body(self, grad_inputs, row_outs):
        R = self.red
        od, op, refs, cd = self.steps[R]
        name = op["name"]
        cc = ctype(cd)
        n_in, n_out = len(self.inputs), len(self.outputs)
        idx = self._row_idx
        stats, red_expr, x_of = self._row_stats()
        src = list(stats)

        def adjoint_pass(through_all):
            body, regs = self.forward_body(idx, red_expr=red_expr)
            adj = {}
            for s_, (o, _, _, _) in enumerate(self.steps):
                if o in _ops.FLOATING and (through_all or s_ >= R):
                    adj[("s", s_)] = f"g{s_}"
                    body.append(f"opmath_t<{ctype(o)}> g{s_} = 0;")
            if through_all:
                for k, (_, dt, _) in enumerate(self.inputs):
                    if dt in _ops.FLOATING:
                        adj[("i", k)] = f"gi{k}"
                        body.append(f"opmath_t<{ctype(dt)}> gi{k} = 0;")
            for j, s_ in enumerate(self.outputs):
                if ("s", s_) in adj and j not in row_outs:
                    body.append(f"g{s_} += opmath_t<{ctype(self.steps[s_][0])}>"
                                f"(gout{j}[{idx(n_in + j)}]);")
            for s_ in reversed(range(R + 1, len(self.steps))):
                if ("s", s_) in adj:
                    body += self._backward_step(s_, regs, adj)
            return body, regs, adj
        is_ln = name == "layer_norm"
        w_of = (lambda regs: self._ref(refs[1], cd, regs)) if is_ln and refs[1][0] != "c" \
            else (lambda regs: f"opmath_t<{cc}>(1)")
        # pass A: what the reduction's backward needs from the whole row
        src.append(f"    opmath_t<{cc}> red_g = 0, red_g2 = 0;")
        src += self._simd("reduction(+:red_g) reduction(+:red_g2)" if is_ln else
                          "reduction(+:red_g)")
        src.append(self._jloop())
        body, regs, adj = adjoint_pass(False)
        src += ["      " + ln for ln in body]
        if is_ln:
            src.append(f"      {{ const opmath_t<{cc}> gh = opmath_t<{cc}>(g{R}) * {w_of(regs)}; "
                       f"red_g += gh; red_g2 += gh * ({x_of(regs)} - amu) * ars; }}")
        elif name == "softmax":
            src.append(f"      red_g += opmath_t<{cc}>(g{R}) * cv<{cc}>(v{R});")
        else:
            src.append(f"      red_g += opmath_t<{cc}>(g{R});")
        src.append("    }")
        src += self._warp("red_g", "wsum")
        if is_ln:
            src += self._warp("red_g2", "wsum")
        for j in row_outs:
            src.append(f"    red_g += opmath_t<{cc}>(gout{j}[{self._off(n_in + j)}]);")
        # pass B: every step's backward
        src += self._simd()
        src.append(self._jloop())
        body, regs, adj = adjoint_pass(True)
        x = x_of(regs)
        gR = f"opmath_t<{cc}>(g{R})"
        xh = f"({x} - amu) * ars"
        if is_ln:
            t = f"opmath_t<{cc}>"
            gx = (f"ars * ({gR} * {w_of(regs)} - red_g / {t}(L) - "
                  f"({x} - amu) * ars * (red_g2 / {t}(L)))")
        else:
            gx = {"softmax": f"cv<{cc}>(v{R}) * ({gR} - red_g)",
                  "log_softmax": f"{gR} - std::exp(cv<{cc}>(v{R})) * red_g",
                  "sum": "red_g", "mean": "red_g / opmath_t<" + cc + ">(L)",
                  "logsumexp": f"red_g * std::exp({x} - cv<{cc}>(vrow))"}[name]
        if refs[0] in adj:
            body.append(f"{adj[refs[0]]} += decltype({adj[refs[0]]})({gx});")
        if is_ln and refs[1] in adj:  # the weight's share of this element: g * xh
            body.append(f"{adj[refs[1]]} += decltype({adj[refs[1]]})({gR} * {xh});")
        if is_ln and refs[2] in adj:
            body.append(f"{adj[refs[2]]} += decltype({adj[refs[2]]})({gR});")
        for s_ in reversed(range(R)):
            if ("s", s_) in adj:
                body += self._backward_step(s_, regs, adj)
        for j, k in enumerate(grad_inputs):
            dt = self.inputs[k][1]
            if any(j == q for q, _ in self._partial):
                body.append(f"pa{j}[j] += gi{k};")
            else:
                body.append(f"gin{j}[{idx(n_in + n_out + j)}] = {ctype(dt)}(gi{k});")
        src += ["      " + ln for ln in body]
        src.append("    }")
        return src

    def _expr(self, op, refs, cd, od, regs):
        co = ctype(od)
        k = op["kind"]
        if k == "unary":
            return f"cv<{co}>(ember::fn::{op['fn']}{{}}({self._ref(refs[0], cd, regs)}))"
        if k == "binary":
            if op.get("cls") == "LOGICAL":
                a = f"bool({regs[refs[0]]})" if refs[0][0] != "c" else literal(bool(refs[0][1]))
                b = f"bool({regs[refs[1]]})" if refs[1][0] != "c" else literal(bool(refs[1][1]))
                return f"cv<{co}>(ember::fn::{op['fn']}{{}}({a}, {b}))"
            return (f"cv<{co}>(ember::fn::{op['fn']}{{}}({self._ref(refs[0], cd, regs)}, "
                    f"{self._ref(refs[1], cd, regs)}))")
        if k == "where":
            c = regs[refs[0]]
            return f"sel(bool({c}), {self._ref(refs[1], od, regs)}, {self._ref(refs[2], od, regs)})"
        if k == "clamp":
            x = self._ref(refs[0], od, regs)
            e = f"[&] {{ opmath_t<{co}> t = {x};"
            if refs[1] != ("c", None):
                lo = self._ref(refs[1], od, regs)
                e += f" t = sel(t < {lo}, {lo}, t);"
            if refs[2] != ("c", None):
                hi = self._ref(refs[2], od, regs)
                e += f" t = sel(t > {hi}, {hi}, t);"
            return e + " return t; }()"
        if k == "cast":
            return f"cv<{co}>({regs[refs[0]]})"
        raise AssertionError(k)

    def _store(self, j, s, idx):
        od = self.steps[s][0]
        return f"out{j}[{idx}] = {ctype(od)}(v{s});"

    def _kernel(self, n_in, ptr_decls, body_fn, nops):
        """The ember_kernel function around `body_fn(idx)` -> lines."""
        if self.target == "cuda":
            from . import _cuda
            return _cuda.flat_kernel(self, ptr_decls, body_fn, nops)
        nd = len(self.shape)
        src = [prelude(bool(self.dropouts) and not self._mask_ops, bool(self._partial)),
               'extern "C" void ember_kernel(char* const* p, const int64_t* meta, '
               "int64_t begin, int64_t end) {"]
        src += ["  " + d for d in ptr_decls]
        flat_idx = self.flat_index
        draws = bool(self.dropouts) and not self._mask_ops
        if draws:  # runs of at most RUN elements, their draws made first (Note [Fused dropout])
            src += ["  " + ln for ln in self._draw_buffers(self.RUN)]
        src.append("  if (meta[0]) {")
        if draws:
            src.append(f"    for (int64_t c = begin; c < end; c += {self.RUN}) {{")
            src.append(f"    const int64_t ce = end - c < {self.RUN} ? end : c + {self.RUN};")
            src += ["    " + ln for ln in self._fill_draws("c", "ce - c")]
            src.append("    for (int64_t i = c; i < ce; ++i) {")
            self._mb = "i - c"
        else:
            src.append("    for (int64_t i = begin; i < end; ++i) {")
        src += ["      " + ln for ln in body_fn(lambda k: flat_idx(k, "i"))]
        src.append("    }")
        if draws:
            src.append("    }")
        src.append("    return;")
        src.append("  }")
        if nd == 0:
            src.append("  {")
            src.append("    const int64_t i = 0;")
            src += ["    " + ln for ln in self._fill_draws("0", "1")]
            self._mb = "0"
            src += ["    " + ln for ln in body_fn(lambda k: "0")]
            src.append("  }")
        else:
            src.append(f"  const int64_t* sz = meta + 2; const int64_t* st = meta + 2 + {nd};")
            src.append("  int64_t i = begin;")
            src.append("  while (i < end) {")
            src.append(f"    int64_t off[{nops}] = {{0}};")
            src.append("    int64_t rem = i, last = 0;")
            src.append(f"    for (int d = {nd - 1}; d >= 0; --d) {{")
            src.append("      const int64_t c = rem % sz[d]; rem /= sz[d];")
            src.append(f"      if (d == {nd - 1}) last = c;")
            src.append(f"      for (int k = 0; k < {nops}; ++k) off[k] += c * st[k * {nd} + d];")
            src.append("    }")
            src.append(f"    int64_t run = sz[{nd - 1}] - last;")
            src.append("    if (run > end - i) run = end - i;")
            if draws:
                src.append(f"    if (run > {self.RUN}) run = {self.RUN};")
                src += ["    " + ln for ln in self._fill_draws("i", "run")]
                self._mb = "j"
            src.append("    for (int64_t j = 0; j < run; ++j) {")
            src += ["      " + ln for ln in body_fn(
                lambda k: f"off[{k}] + j * st[{k} * {nd} + {nd - 1}]")]
            src.append("    }")
            src.append("    i += run;")
            src.append("  }")
        src.append("}")
        self._mb = None
        return "\n".join(src) + "\n"

    def scalar_flags(self):
        """Per input: a single element, read once in the flat loop."""
        return [math.prod(sizes) == 1 for _, _, sizes in self.inputs]

    def flat_index(self, k, i):
        if k < len(self._scalar) and self._scalar[k]:
            return "0"
        return i

    # ---- forward -----------------------------------------------------------------------
    def forward_source(self, masks=False):
        """masks: the kernel also writes each dropout's mask (uint8, after the outputs) for a
        backward that reads it instead of drawing again (elementwise groups)."""
        if self.red is not None:
            return self.row_source(masks)
        n_in, n_out = len(self.inputs), len(self.outputs)
        n_m = len(self.dropouts) if masks else 0
        self._scalar = self.scalar_flags() + [False] * (n_out + n_m)
        decls = [f"const {ctype(dt)}* __restrict__ in{k} = (const {ctype(dt)}*)p[{k}];"
                 for k, (_, dt, _) in enumerate(self.inputs)]
        decls += [f"{ctype(self.steps[s][0])}* __restrict__ out{j} = "
                  f"({ctype(self.steps[s][0])}*)p[{n_in + j}];"
                  for j, s in enumerate(self.outputs)]
        decls += [f"uint8_t* __restrict__ mko{j} = (uint8_t*)p[{n_in + n_out + j}];"
                  for j in range(n_m)]

        def body(idx):
            lines, _ = self.forward_body(idx)
            for j, s in enumerate(self.outputs):
                lines.append(self._store(j, s, idx(n_in + j)))
            for j in range(n_m):
                lines.append(f"mko{j}[{idx(n_in + n_out + j)}] = "
                             f"uint8_t(m{self.dropouts[j]} != 0);")
            return lines
        return self._kernel(n_in, decls, body, n_in + n_out + n_m)

    # ---- backward ----------------------------------------------------------------------
    def differentiable(self):
        """Steps whose value is floating (gradients flow through them)."""
        return [od in _ops.FLOATING for od, _, _, _ in self.steps]

    def backward_source(self, grad_inputs, masks=False, scalar_gouts=None, partial=()):
        """Operands: inputs, one grad per output (dtype of that output), then one result
        per input index in `grad_inputs` (dtype of that input, iteration shape); with
        `masks`, then the forward's dropout masks (forward_source(masks=True)).
        scalar_gouts: per output, whether its grad is one element read once (the expanded
        gradient of a sum or mean)."""
        if self.red is not None:
            return self.row_backward_source(grad_inputs, masks, scalar_gouts, partial)
        n_in, n_out, n_g = len(self.inputs), len(self.outputs), len(grad_inputs)
        n_m = len(self.dropouts) if masks else 0
        self._scalar = self.scalar_flags() + list(scalar_gouts or [False] * n_out) + \
            [False] * (n_g + n_m)
        decls = self._backward_pointers(grad_inputs)
        decls += [f"const uint8_t* __restrict__ mk{s} = "
                  f"(const uint8_t*)p[{n_in + n_out + n_g + j}];"
                  for j, s in enumerate(self.dropouts[:n_m])]
        self._mask_ops = {s: n_in + n_out + n_g + j for j, s in enumerate(self.dropouts[:n_m])}
        try:
            return self._backward_flat(grad_inputs, decls, n_m)
        finally:
            self._mask_ops = None

    def _backward_flat(self, grad_inputs, decls, n_m):
        n_in, n_out = len(self.inputs), len(self.outputs)

        def body(idx):
            lines, regs = self.forward_body(idx)
            adj = {}
            # adjoints for floating steps and inputs
            for s, (od, _, _, _) in enumerate(self.steps):
                if od in _ops.FLOATING:
                    adj[("s", s)] = f"g{s}"
                    lines.append(f"opmath_t<{ctype(od)}> g{s} = 0;")
            for k, (_, dt, _) in enumerate(self.inputs):
                if dt in _ops.FLOATING:
                    adj[("i", k)] = f"gi{k}"
                    lines.append(f"opmath_t<{ctype(dt)}> gi{k} = 0;")
            for j, s in enumerate(self.outputs):
                if ("s", s) in adj:
                    lines.append(f"g{s} += opmath_t<{ctype(self.steps[s][0])}>"
                                 f"(gout{j}[{idx(n_in + j)}]);")
            for s in reversed(range(len(self.steps))):
                if ("s", s) not in adj:
                    continue
                lines += self._backward_step(s, regs, adj)
            for j, k in enumerate(grad_inputs):
                dt = self.inputs[k][1]
                lines.append(f"gin{j}[{idx(n_in + n_out + j)}] = {ctype(dt)}(gi{k});")
            return lines
        return self._kernel(n_in, decls, body, n_in + n_out + len(grad_inputs) + n_m)

    def _backward_step(self, s, regs, adj):
        od, op, refs, cd = self.steps[s]
        g = adj[("s", s)]
        cc = ctype(cd) if cd in _ops.FLOATING else ctype(od)
        Cf = cd if cd in _ops.FLOATING else od
        gv = f"opmath_t<{cc}>({g})"
        val = lambda r: self._ref(r, Cf, regs)  # noqa: E731
        r = f"cv<{cc}>(v{s})"
        k = op["kind"]
        contrib = []
        if k == "unary":
            rule = _ops.UNARY_GRADS.get(op["name"])
            if rule is not None:
                contrib.append((refs[0], rule(val(refs[0]), r, gv)))
        elif k == "binary":
            rule = _ops.BINARY_GRADS.get(op["name"])
            if rule is not None and op.get("cls") not in ("COMPARE", "LOGICAL", "BITS"):
                ga, gb = rule(val(refs[0]), val(refs[1]), r, gv)
                contrib += [(refs[0], ga), (refs[1], gb)]
        elif k == "where":
            c = regs[refs[0]]
            contrib += [(refs[1], f"sel(bool({c}), {gv}, opmath_t<{cc}>(0))"),
                        (refs[2], f"sel(bool({c}), opmath_t<{cc}>(0), {gv})")]
        elif k == "clamp":
            x = val(refs[0])
            cond = []
            if refs[1] != ("c", None):
                cond.append(f"{x} >= {val(refs[1])}")
            if refs[2] != ("c", None):
                cond.append(f"{x} <= {val(refs[2])}")
            c = " && ".join(cond) or "true"
            contrib.append((refs[0], f"sel(bool({c}), {gv}, opmath_t<{cc}>(0))"))
            for b in refs[1:]:
                if b[0] != "c":
                    contrib.append((b, None))  # tensor bounds: unsupported (not fused)
        elif k == "cast":
            contrib.append((refs[0], gv))
        elif k == "dropout":
            contrib.append((refs[0], f"{gv} * m{s}"))
        lines = []
        for ref, e in contrib:
            if e is None or ref[0] == "c" or ref not in adj:
                continue
            lines.append(f"{adj[ref]} += decltype({adj[ref]})({e});")
        return lines
