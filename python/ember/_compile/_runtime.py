"""Running fusion groups: the graph rewrite that replaces a group by one
``ember::fusion_group`` node, the runner the interpreter calls for it, and the
autograd Function that makes it differentiable (Note [Fused backward])."""
from __future__ import annotations

import ember

from .. import _C
from ..autograd.function import Function
from . import _codegen, _cuda, _fusion, _log, _toolchain

GRAIN = 32768


class FusedKernel:
    """One compiled group: its program, forward kernel and (lazily) backward kernels, for
    the CPU (a shared library from the C++ compiler) or one CUDA device (NVRTC's image,
    Note [CUDA fusion kernels])."""

    def __init__(self, prog, name, device="cpu", target=None):
        self.prog = prog
        self.name = name
        self.device = ember.device(device)
        # the code generated: "cuda" for a GPU's tensors (the tests also run CUDA kernels on
        # CPU tensors through a host emulation of them), else "cpu"
        self.cuda = (target or self.device.type) == "cuda"
        if self.cuda:
            self.source = _cuda.forward_source(prog)
            self.handle, self.path, self.cached = self._load_cuda(
                self.source, len(prog.inputs) + len(prog.outputs))
        else:
            self.source = prog.forward_source()
            self.handle, self.path, self.cached = _toolchain.load(self.source, log=_log.fusion)
        self.out_dtypes = [getattr(ember, prog.steps[s][0]) for s in prog.outputs]
        self.floating_in = [dt in ("float32", "float64", "float16", "bfloat16")
                            for _, dt, _ in prog.inputs]
        self.scalar = prog.scalar_flags() + [False] * len(prog.outputs)
        self._bwd = {}
        # where a gradient flows through an elementwise group's dropouts, the forward saves
        # their masks (a byte an element) so the backward does not draw again
        self.saves_masks = bool(prog.dropouts)
        self._masked = None  # (handle, scalar flags) of that forward, built on first use
        self.id = _C._compile_register_group(self)

    def _load_cuda(self, source, nops):
        index = self.device.index if self.device.index is not None else \
            ember.cuda.current_device()
        h, path, cached = _cuda.load(source, nops, len(self.prog.shape), index)
        if path and not cached:
            _log.fusion(f"compiled {path} with NVRTC")
        return h, path, cached

    def run(self, handle, operands, shape, scalar, rows, grain, chunk=0):
        """One kernel over `operands`: threaded chunks on the CPU (starting at multiples of
        `chunk` when given, Note [Row partial sums]), a launch on CUDA."""
        if self.cuda:
            from .. import _C_cuda
            _C_cuda._fusion_launch(handle, operands, shape, scalar, rows)
        else:
            _C._compile_run(handle, operands, shape, scalar, rows, grain, chunk)

    def empty(self, shape, dtype):
        return ember.empty(shape, dtype=dtype, device=self.device)

    def _load_source(self, source, nops):
        if self.cuda:
            return self._load_cuda(source, nops)[0]
        return _toolchain.load(source, log=_log.fusion)[0]

    def _masked_kernel(self):
        """The forward that also writes the dropouts' masks: (handle, scalar flags)."""
        if self._masked is None:
            n_m = len(self.prog.dropouts)
            src = (_cuda.forward_source(self.prog, True) if self.cuda
                   else self.prog.forward_source(True))
            flags = self.scalar if self.prog.red is None else \
                [False] * (len(self.prog.inputs) + len(self.prog.outputs))
            self._masked = (self._load_source(src, len(self.scalar) + n_m), flags + [False] * n_m)
        return self._masked

    def forward(self, inputs, masks=False):
        """The group's outputs; with `masks` (saves_masks), also its dropouts' masks."""
        shape = list(ember.broadcast_shapes(*[t.shape for t in inputs]))
        ms = [self.empty(shape, ember.uint8) for _ in self.prog.dropouts] if masks else []
        handle, flags = self._masked_kernel() if masks else (self.handle, None)
        if self.prog.red is None:
            outs = [self.empty(shape, d) for d in self.out_dtypes]
            self.run(handle, list(inputs) + outs + ms, shape, flags or self.scalar, 0, GRAIN)
            return (outs, ms) if masks else outs
        # a row kernel: reductions over the last dimension (Note [Generated kernels])
        keep = self.prog.steps[self.prog.red][1]["keepdim"]
        row_outs = set(self.prog.row_outputs())
        outs, operands = [], list(inputs)
        for j, d in enumerate(self.out_dtypes):
            if j in row_outs:
                o = self.empty(shape[:-1] + ([1] if keep else []), d)
                operands.append(o.view(shape[:-1] + [1]))
            else:
                o = self.empty(shape, d)
                operands.append(o)
            outs.append(o)
        grain = max(1, GRAIN // max(1, shape[-1]))
        self.run(handle, operands + ms, shape, [False] * (len(operands) + len(ms)), 1, grain)
        return (outs, ms) if masks else outs

    def backward_kernel(self, need, masks=False, scalar_gouts=None, partial=()):
        """The backward kernel for the inputs in `need` (see Program.backward_source)."""
        sg = tuple(scalar_gouts or (False,) * len(self.prog.outputs))
        key = (need, masks, sg, partial)
        k = self._bwd.get(key)
        if k is None:
            n_m = len(self.prog.dropouts) if masks else 0
            if self.cuda:
                src = _cuda.backward_source(self.prog, need, masks, sg)
            else:
                src = self.prog.backward_source(list(need), masks, sg, partial)
            nops = len(self.prog.inputs) + len(self.prog.outputs) + len(need) + n_m + \
                (1 if partial else 0)
            h = self._load_source(src, nops)
            flags = self.prog.scalar_flags() + list(sg) + [False] * (len(need) + n_m)
            k = self._bwd[key] = (h, flags, src)
        return k

    def row_invariant(self, k, shape):
        """Whether input k is the same along every row of `shape` (one value per column)."""
        sizes = self.prog.inputs[k][2]
        return (not self.cuda and len(shape) >= 2 and len(sizes) >= 1 and
                sizes[-1] == shape[-1] and all(d == 1 for d in sizes[:-1]))

    def _draws(self, inputs):
        """(seed, first block) operands for each dropout, reserved in graph order as eager
        dropout reserves them (Note [Fused dropout])."""
        shape = ember.broadcast_shapes(*[t.shape for t in inputs])
        n = 1
        for d in shape:
            n *= d
        out = []
        for _ in self.prog.dropouts:
            pair = _C._philox_reserve_bernoulli(n)
            if self.device.type != "cpu":
                pair = tuple(t.to(self.device) for t in pair)
            out += pair
        return out

    def __call__(self, inputs):
        if self.prog.dropouts:
            inputs = list(inputs) + self._draws(inputs)
        if _C.is_grad_enabled() and any(t.requires_grad for t in inputs):
            return list(_FusedFunction.apply(self, *inputs))
        return self.forward(inputs)


class _FusedFunction(Function):
    """Note [Fused backward]: the forward kernel saves only the group's inputs; the
    backward kernel recomputes the group's values in registers and runs every op's
    backward rule (Note [Fusible ops]) in reverse, so the backward of a group is one
    fused loop too. Inputs that were broadcast get their gradient summed to their
    shape (eager's sum_to_size)."""

    @staticmethod
    def forward(ctx, kernel, *inputs):
        ctx.kernel = kernel
        ctx.n_in = len(inputs)
        if kernel.saves_masks:
            outs, masks = kernel.forward(inputs, masks=True)
            ctx.save_for_backward(*inputs, *masks)
        else:
            outs = kernel.forward(inputs)
            ctx.save_for_backward(*inputs)
        nondiff = [o for o in outs if not o.is_floating_point()]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        kernel = ctx.kernel
        saved = ctx.saved_tensors
        inputs, masks = saved[:ctx.n_in], list(saved[ctx.n_in:])
        need = tuple(k for k, t in enumerate(inputs)
                     if ctx.needs_input_grad[k + 1] and kernel.floating_in[k])
        result = [None] * len(inputs)
        if not need:
            return (None, *result)
        shape = list(ember.broadcast_shapes(*[t.shape for t in inputs]))
        gouts, sg = [], []
        for g, d in zip(grads, kernel.out_dtypes):
            if g is None:
                g = ember.zeros([], dtype=d, device=kernel.device)
            elif g.dim() and not any(g.stride()) and g.numel():
                g = g[(0,) * g.dim()]  # one value expanded (a sum's gradient): read it once
            gouts.append(g)
            sg.append(g.dim() == 0)
        if kernel.prog.red is None:
            h, flags, _ = kernel.backward_kernel(need, bool(masks), sg)
            gins = [kernel.empty(shape, inputs[k].dtype) for k in need]
            kernel.run(h, list(inputs) + gouts + gins + masks, shape, flags, 0, GRAIN)
        else:
            # Note [Row partial sums]: inputs the same along the rows sum per range of rows
            partial = tuple(j for j, k in enumerate(need) if kernel.row_invariant(k, shape))
            h, flags, _ = kernel.backward_kernel(need, bool(masks), sg, partial)
            row_outs = set(kernel.prog.row_outputs())
            gouts = [g.reshape(shape[:-1] + [1]) if j in row_outs and g.numel() > 1 else g
                     for j, g in enumerate(gouts)]
            L = shape[-1]
            rows = 1
            for d in shape[:-1]:
                rows *= d
            grain = max(1, GRAIN // max(1, L))
            chunk, extra = 0, []
            gins = []
            if partial and rows:
                parts = max(1, min(_C.get_num_threads(), -(-rows // grain)))
                chunk = -(-rows // parts)
                extra = [ember.tensor(chunk, dtype=ember.int64)]
            for j, k in enumerate(need):
                if j in partial:
                    dt = inputs[k].dtype
                    acc = ember.float32 if dt in (ember.float16, ember.bfloat16) else dt
                    buf = ember.zeros([-(-rows // max(1, chunk)), L], dtype=acc)
                    gins.append(buf)
                else:
                    gins.append(kernel.empty(shape, inputs[k].dtype))
            ops = [g[0, 0] if j in partial else g for j, g in enumerate(gins)]
            if rows:
                kernel.run(h, list(inputs) + gouts + ops + masks + extra, shape,
                           [False] * (len(flags) + len(extra)), 1, grain, chunk)
            # a partial buffer's column sums, in the input's shape ([L] or [1, ..., 1, L])
            gins = [g.sum(0).to(inputs[k].dtype).reshape(inputs[k].shape) if j in partial else g
                    for j, (k, g) in enumerate(zip(need, gins))]
        for k, g in zip(need, gins):
            if list(g.shape) != list(inputs[k].shape):
                g = g.sum_to_size(inputs[k].shape)
            result[k] = g
        return (None, *result)


def _set_outputs(prog, group, graph_outputs):
    """Makes the group's values used outside it (or returned) the program's outputs."""
    members = set(group.nodes)
    out_values = []
    for n in group.nodes:
        v = n.output(0)
        if v in graph_outputs or any(u not in members for u, _ in v.uses()):
            out_values.append(v)
            prog.outputs.append(prog.val_index[v])
    return out_values


def programs(graph, input_requires_grad):
    """The fusion groups of `graph` as programs, without compiling or rewriting anything
    (the tests generate every op's CUDA source from these)."""
    rg = _fusion.requires_grad_values(graph, input_requires_grad)
    outputs = set(graph.outputs())
    progs = []
    for g in _fusion.find_groups(graph, rg):
        prog = _codegen.Program(g, _fusion._tensor_info)
        if _set_outputs(prog, g, outputs):
            progs.append(prog)
    return progs


def fuse_graph(graph, input_requires_grad, fn_name="fn", device="cpu"):
    """Replaces the fusion groups of `graph`, whose tensors live on `device`, by
    fusion_group nodes; returns the kernels. `device` None (inputs on several devices):
    nothing is fused."""
    if device is None:
        _log.fusion(f"{fn_name}: inputs on several devices: nothing fused")
        return []
    if ember.device(device).type == "cuda":
        ok, why = _cuda.available()
        if not ok:
            _log.fusion(f"{fn_name}: no CUDA fusion ({why}): its groups run eagerly")
            return []
    elif _toolchain.compiler() is None:
        _log.fusion(f"{fn_name}: no C++ compiler: fusion groups run in the interpreter")
        return []
    rg = _fusion.requires_grad_values(graph, input_requires_grad)
    groups = _fusion.find_groups(graph, rg)
    kernels = []
    outputs = set(graph.outputs())
    # programs first, while every value still has its recorded dtype and sizes; a group
    # that reads another group's result gets the replacing value at rewrite time
    progs = [_codegen.Program(g, _fusion._tensor_info) for g in groups]
    replaced = {}
    randoms = _fusion.random_ops()
    drawing = set()  # fusion_group nodes that draw
    for gi, (g, prog) in enumerate(zip(groups, progs)):
        nodes = graph.nodes()
        pos = {n: i for i, n in enumerate(nodes)}
        members = set(g.nodes)
        out_values = _set_outputs(prog, g, outputs)
        if not out_values:
            continue
        in_values = [replaced.get(v, v) for v, _, _ in prog.inputs if v is not None]
        earliest = max([pos.get(v.node(), -1) for v in in_values] + [-1])
        users = [pos.get(u, len(nodes)) for v in out_values for u, _ in v.uses()
                 if u not in members]
        latest = min(users + [len(nodes)])
        if prog.dropouts:
            # between the draws around it, so the generator is read in graph order
            first = min(pos[n] for n in g.nodes if n.qualified_name == "aten::dropout")
            last = max(pos[n] for n in g.nodes if n.qualified_name == "aten::dropout")
            others = [pos[n] for n in nodes if n not in members and
                      (n.qualified_name in randoms or n in drawing)]
            if any(first < q < last for q in others):
                earliest = latest  # a draw in between: leave the group to eager
            earliest = max([earliest] + [q for q in others if q < first])
            latest = min([latest] + [q for q in others if q > last])
        if earliest >= latest:
            _log.fusion(f"{fn_name}: group {gi} skipped (no place for it in the graph)")
            continue
        name = f"{fn_name}_group{gi}"
        try:
            kernel = FusedKernel(prog, name, device)
        except ValueError as e:  # a group too big for one CUDA kernel's parameters
            _log.fusion(f"{fn_name}: group {gi} left to eager: {e}")
            continue
        kernels.append(kernel)
        if earliest + 1 < len(nodes):
            graph.set_insert_point_before(nodes[earliest + 1])
        else:
            graph.set_insert_point_end(graph.block())
        lst = graph.insert(graph.create("prim::ListConstruct", in_values, 1))
        lst.output(0).set_type("Tensor[]")
        idc = graph.constant(kernel.id)
        call = graph.insert(graph.create_op("ember::fusion_group", [lst.output(0), idc]))
        call.source = g.nodes[0].source
        if prog.dropouts:
            drawing.add(call)
        unp = graph.insert(graph.create("prim::ListUnpack", [call.output(0)], len(out_values)))
        for k, v in enumerate(out_values):
            unp.output(k).set_type("Tensor")
            v.replace_all_uses_with(unp.output(k))
            replaced[v] = unp.output(k)
        for n in reversed(g.nodes):
            n.destroy()
        _log.fusion(f"{fn_name}: fusion group {gi} ({kernel.path or 'cached'}): "
                    f"{len(g.nodes)} ops [{', '.join(n.kind for n in g.nodes)}], "
                    f"{len(in_values)} inputs, {len(out_values)} outputs, shape {g.shape}")
        _log.output_code(name, kernel.source)
    graph.lint()
    return kernels
