"""Every TorchScript example of the seeds (001 lecture, 002 tips, 004 notes) as written,
with ``ember`` for ``torch``; the C++ example app is tests/test_jit_cpp.py."""
import pytest

import ember as torch  # the seeds' spelling


def test_001_script_function_graph():
    @torch.jit.script
    def fn(x):
        return x * 2

    assert isinstance(fn, torch.jit.ScriptFunction)
    g = str(fn.graph)
    assert g.startswith("graph(%x : Tensor):")
    assert "aten::mul" in g and "prim::Constant[value=2]()" in g
    x = torch.randn(5)
    assert torch.equal(fn(x), x * 2)


def test_001_trace_function_graph_and_code():
    def fn(x):
        return x * 2
    fn = torch.jit.trace(fn, [torch.randn(5)])
    g = str(fn.graph)
    assert "graph(%x : Float(5))" in g
    assert "Long() = prim::Constant[value={2}]()" in g
    assert "aten::mul(%x" in g
    assert fn.code == "def fn(x: Tensor) -> Tensor:\n    return torch.mul(x, ember.tensor(2))\n"
    x = torch.randn(5)
    assert torch.equal(fn(x), x * 2)


def test_001_trace_vs_script_of_a_loop():
    def fn(x):
        for i in range(x.dim()):  # noqa: B007 - the seed's code
            x = x * x
        return x

    script_fn = torch.jit.script(fn)
    trace_fn = torch.jit.trace(fn, [torch.randn(5, 5)])
    assert script_fn.code == (
        "def fn(x: Tensor) -> Tensor:\n"
        "    x0 = x\n"
        "    for i in range(torch.dim(x)):\n"
        "        x0 = torch.mul(x0, x0)\n"
        "    return x0\n")
    # PyTorch's code, plus the guard ember records on the unrolled loop's bound
    code = trace_fn.code
    assert code.startswith("def fn(x: Tensor) -> Tensor:\n    ember.jit._guard(torch.dim(x), 2)")
    assert code.endswith("\n    x0 = torch.mul(x, x)\n    return torch.mul(x0, x0)\n")
    x = torch.rand(4, 4)
    assert torch.equal(script_fn(x), fn(x))
    # The trace unrolled the loop for a 2-d input: a 3-d input takes another path, and the
    # guard on x.dim() says so (PyTorch would silently square twice).
    with pytest.raises(RuntimeError, match="guard failed.*dim"):
        trace_fn(torch.rand(2, 2, 2))
    y = torch.rand(2, 2, 2)
    assert torch.equal(script_fn(y), fn(y))


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(1, 10), torch.nn.Tanh(), torch.nn.Linear(10, 1))


def test_001_trace_module_save_load_keeps_grad_fn(tmp_path):
    model = _model()
    traced_model = torch.jit.trace(model, [torch.randn(8, 1)])
    assert type(traced_model).__name__ == "TopLevelTracedModule"
    assert repr(traced_model) == (
        "Sequential(\n"
        "  original_name=Sequential\n"
        "  (0): Linear(original_name=Linear)\n"
        "  (1): Tanh(original_name=Tanh)\n"
        "  (2): Linear(original_name=Linear)\n"
        ")")
    traced_model.save(str(tmp_path / "traced_model.pt"))
    loaded_model = torch.jit.load(str(tmp_path / "traced_model.pt"))
    x = torch.randn(8, 1)
    out = loaded_model(x)
    assert out.grad_fn is not None
    assert torch.allclose(out, model(x))
    out.sum().backward()
    assert all(p.grad is not None for p in loaded_model.parameters())


def test_001_script_module_code_and_inlined_graph():
    model = _model()
    scripted_model = torch.jit.script(model)
    code = scripted_model.code
    assert code.startswith("def forward(self,\n")
    assert '(getattr(self, "0")).forward(' in code.replace("_0", 'getattr(self, "0")') or \
        'getattr(self, "0")' in code
    g = str(scripted_model.inlined_graph)
    assert "aten::linear" in g and "aten::tanh" in g and "prim::CallMethod" not in g
    x = torch.randn(8, 1)
    assert torch.allclose(scripted_model(x), model(x))


def test_001_fuser_and_graph_for():
    def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
        xi = torch.max(x1, x2)
        yi = torch.max(y1, y2)
        wi = torch.clamp(torch.min(x1 + w1, x2 + w2) - xi, min=0)
        hi = torch.clamp(torch.min(y1 + h1, y2 + h2) - yi, min=0)
        area_i = wi * hi
        area_u = w1 * h1 + w2 * h2 - wi * hi
        return area_i / torch.clamp(area_u, min=1e-5)

    ratio_iou_scripted = torch.jit.script(ratio_iou)
    x1, y1, w1, h1, x2, y2, w2, h2 = torch.randn(8, 10, 100).exp()
    with torch.jit.fuser("fuser1"):
        got = ratio_iou_scripted(x1, y1, w1, h1, x2, y2, w2, h2)
    assert torch.allclose(got, ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2))
    g = str(ratio_iou_scripted.graph_for(x1, y1, w1, h1, x2, y2, w2, h2))
    assert "aten::maximum" in g and "aten::clamp" in g


def test_002_batch_gather_script():
    @torch.jit.script
    def batch_gather_jit(tensor, indices):
        output = []
        for i in range(tensor.size(0)):
            output += [tensor[i][indices[i]]]
        return torch.stack(output)

    def batch_gather(tensor, indices):
        output = []
        for i in range(tensor.size(0)):
            output += [tensor[i][indices[i]]]
        return torch.stack(output)

    t = torch.randn(4, 5, 3)
    idx = torch.randint(0, 5, (4,))
    assert torch.equal(batch_gather_jit(t, idx), batch_gather(t, idx))


def test_002_script_module_trained_with_autocast_and_gradscaler():
    torch.manual_seed(0)

    class Net(torch.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Conv2d(2, 16, 1),
                torch.nn.BatchNorm2d(16),
                torch.nn.ReLU(),
                torch.nn.Conv2d(16, 1, 1))

        @torch.jit.script_method
        def forward(self, x):
            return self.net(x)

    def grid(width, height):
        hrange = torch.arange(width).unsqueeze(0).repeat([height, 1]).div(width)
        vrange = torch.arange(height).unsqueeze(1).repeat([1, width]).div(height)
        return torch.stack([hrange, vrange], 0)

    def checker(width, height, freq):
        hrange = torch.arange(width).reshape([1, width]).mul(freq / width / 2.0).fmod(1.0).gt(0.5)
        vrange = torch.arange(height).reshape([height, 1]).mul(freq / height / 2.0).fmod(1.0).gt(0.5)
        return hrange.logical_xor(vrange).float()

    inputs = grid(16, 16).unsqueeze(0)
    targets = checker(16, 16, 4).unsqueeze(0).unsqueeze(1)
    net = Net()
    assert "prim::CallMethod" in str(net.graph)
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.Adam(net.parameters(), 0.01)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with torch.autocast("cpu"):
            outputs = net(inputs)
            loss = loss_fn(outputs.float(), targets)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    # the running statistics the graph updates are the Python module's buffers
    assert net.net[1].num_batches_tracked.item() == 20


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(torch.nn.Module):
    def __init__(self, dg):
        super().__init__()
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


def test_004_script_my_cell_save_load(tmp_path):
    torch.manual_seed(0)
    my_cell = MyCell(MyDecisionGate())
    x, h = torch.rand(3, 4), torch.rand(3, 4)
    eager = my_cell(x, h)
    my_cell = torch.jit.script(my_cell)
    code = my_cell.code
    assert "def forward(self," in code
    assert "prim::If" in str(my_cell.dg.graph)
    got = my_cell(x, h)
    assert torch.allclose(got[0], eager[0]) and torch.allclose(got[1], eager[1])
    my_cell.save(str(tmp_path / "my_model.pt"))
    loaded_model = torch.jit.load(str(tmp_path / "my_model.pt"))
    got = loaded_model(x, h)
    assert torch.allclose(got[0], eager[0])
    # both branches survive scripting: a negative sum takes the other one
    neg = -torch.ones(3, 4) * 10
    assert torch.allclose(loaded_model(neg, h)[0], MyCell.forward(my_cell_eager(my_cell), neg, h)[0])


def my_cell_eager(scripted):
    cell = MyCell(MyDecisionGate())
    cell.load_state_dict(scripted.state_dict())
    return cell


def test_004_trace_decision_gate_guard():
    gate = MyDecisionGate()
    traced = torch.jit.trace(gate, torch.ones(2, 2))
    assert torch.equal(traced(torch.ones(2, 2) * 3), torch.ones(2, 2) * 3)
    # PyTorch's trace would return x for a negative sum too; ember's guard names the line
    with pytest.raises(RuntimeError, match=r"guard failed at .*test_jit_seeds\.py:\d+"):
        traced(-torch.ones(2, 2))


def test_004_ignore():
    class M(torch.nn.Module):
        @torch.jit.ignore
        def helper(self, n):
            return n + 1

        def forward(self, x):
            return x * self.helper(2)

    m = torch.jit.script(M())
    assert torch.equal(m(torch.ones(2)), torch.ones(2) * 3)


def test_004_trace_resnet18_and_run(tmp_path):
    vision = pytest.importorskip("ember.vision.models")
    model = vision.resnet18()
    example = torch.rand(1, 3, 64, 64)
    traced_script_module = torch.jit.trace(model, example)
    output = traced_script_module(torch.ones(1, 3, 64, 64))
    assert torch.allclose(output, model(torch.ones(1, 3, 64, 64)), atol=1e-5)
    assert output[0, :5].grad_fn is not None
    traced_script_module.save(str(tmp_path / "traced_resnet_model.pt"))


def test_onnx_import_alone():
    import ember.onnx  # noqa: F401 - `import torch.onnx` at the top of a program
    assert callable(ember.onnx.export)
