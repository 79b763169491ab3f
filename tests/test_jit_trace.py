"""ember.jit.trace: graphs, module hierarchy, guards, dynamic sizes, autograd/hooks/autocast
through traced modules, and the errors."""
import re

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.testing import assert_close


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def test_trace_function_matches_eager_and_prints_types(device):
    def f(x, y):
        return (x * y).sin() + y.exp().sum(0)

    x, y = ember.randn(3, 4, device=device), ember.randn(3, 4, device=device)
    t = ember.jit.trace(f, (x, y))
    g = str(t.graph)
    assert "graph(%x : Float(3, 4),\n      %y : Float(3, 4)):" in g
    for op in ("aten::mul", "aten::sin", "aten::exp", "aten::sum", "aten::add"):
        assert op in g
    assert ember.equal(t(x, y), f(x, y))
    x2, y2 = ember.randn(3, 4, device=device), ember.randn(3, 4, device=device)
    assert ember.equal(t(x2, y2), f(x2, y2))


def test_trace_records_only_outermost_ops():
    # linear calls matmul/add internally: the graph has one node for it
    def f(x, w, b):
        return F.linear(x, w, b)
    t = ember.jit.trace(f, (ember.randn(2, 3), ember.randn(4, 3), ember.randn(4)))
    ops = [n.kind for n in t.graph.nodes() if n.kind != "prim::Constant"]
    assert ops == ["aten::linear"]


def test_module_hierarchy_kept():
    m = MLP()
    t = ember.jit.trace(m, ember.randn(5, 4))
    g = str(t.graph)
    assert g.count("prim::CallMethod[name=\"forward\"]") == 2
    assert "aten::relu" in g
    assert "aten::linear" in str(t.l1.graph)
    assert "aten::linear" in str(t.inlined_graph) and "CallMethod" not in str(t.inlined_graph)
    assert [n for n, _ in t.named_parameters()] == [n for n, _ in m.named_parameters()]
    # parameters are shared with the original module
    assert t.l1.weight is m.l1.weight
    x = ember.randn(7, 4)
    assert ember.equal(t(x), m(x))
    assert t.state_dict().keys() == m.state_dict().keys()


def test_shared_module_called_twice_one_method():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.relu(self.lin(self.relu(x)))

    b = Block()
    t = ember.jit.trace(b, ember.randn(2, 3))
    assert t.relu._c.type.method_names() == ["forward"]
    x = ember.randn(2, 3)
    assert ember.equal(t(x), b(x))


def test_dynamic_batch_size_through_view():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 2)

        def forward(self, x):
            return self.fc(x.view(x.size(0), -1))

    n = Net()
    t = ember.jit.trace(n, ember.randn(5, 3, 4))
    assert "aten::size" in str(t.graph)
    for b in (1, 2, 9):
        x = ember.randn(b, 3, 4)
        assert_close(t(x), n(x))


def test_size_arithmetic_stays_dynamic():
    def f(x):
        b, c = x.shape
        return x.reshape(b * 2, c // 2)
    t = ember.jit.trace(f, ember.randn(4, 6))
    g = str(t.graph)
    # int arithmetic on the sizes (printed without the overload, as PyTorch's graphs)
    assert re.search(r"int = aten::mul\(%\w+, %\w+\)", g)
    assert re.search(r"int = aten::floordiv\(%\w+, %\w+\)", g)
    assert "prim::Constant[value=[8, 3]]" not in g
    x = ember.randn(10, 6)
    assert ember.equal(t(x), f(x))


def test_guard_on_data_dependent_branch_names_the_line():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1
    line = f.__code__.co_firstlineno + 1
    t = ember.jit.trace(f, ember.ones(3))
    assert "prim::GuardTensorBool" in str(t.graph)
    assert ember.equal(t(ember.ones(3) * 5), ember.ones(3) * 6)
    with pytest.raises(RuntimeError, match=rf"guard failed at .*test_jit_trace\.py:{line}.*"
                                           r"gave True, but this call gives False"):
        t(-ember.ones(3))


def test_guard_on_item_and_baked_size():
    def f(x):
        n = int(x.shape[0])  # baked into the graph as a plain int
        return x * x.max().item() + n
    t = ember.jit.trace(f, ember.tensor([1.0, 2.0, 3.0]))
    assert ember.equal(t(ember.tensor([0.0, 1.0, 3.0])), f(ember.tensor([0.0, 1.0, 3.0])))
    with pytest.raises(RuntimeError, match=r"guard failed.*tensor\.item\(\)"):
        t(ember.tensor([1.0, 2.0, 4.0]))
    with pytest.raises(RuntimeError, match=r"guard failed.*size"):
        t(ember.tensor([1.0, 2.0, 3.0, 0.0]))


def test_guard_on_shape_comparison_allows_same_branch():
    def f(x):
        if x.shape[0] > 2:
            return x * 2
        return x
    t = ember.jit.trace(f, ember.ones(4))
    assert ember.equal(t(ember.ones(7)), ember.ones(7) * 2)  # same branch: no guard failure
    with pytest.raises(RuntimeError, match="guard failed"):
        t(ember.ones(2))


def test_autograd_through_traced_module():
    m = MLP()
    t = ember.jit.trace(m, ember.randn(5, 4))
    x = ember.randn(5, 4, requires_grad=True)
    t(x).sum().backward()
    gx = x.grad.clone()
    gw = m.l1.weight.grad.clone()
    x.grad = None
    m.zero_grad()
    m(x).sum().backward()
    assert_close(gx, x.grad)
    assert_close(gw, m.l1.weight.grad)


def test_hooks_run_on_traced_module():
    m = MLP()
    t = ember.jit.trace(m, ember.randn(5, 4))
    seen = []
    t.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    t(ember.randn(2, 4))
    assert seen == [ember.Size([2, 3])]


def test_autocast_runs_through_graph():
    m = MLP()
    t = ember.jit.trace(m, ember.randn(5, 4))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = t(ember.randn(5, 4))
    assert out.dtype == ember.bfloat16


def test_eval_train_and_dropout():
    class D(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x)
    d = D().eval()
    t = ember.jit.trace(d, ember.ones(100))
    assert ember.equal(t(ember.ones(100)), ember.ones(100))


def test_inplace_ops_and_views_replay():
    def f(x):
        y = x.clone()
        v = y[1:]
        v.mul_(2)
        y.add_(1)
        return y
    x = ember.randn(5)
    t = ember.jit.trace(f, x)
    x2 = ember.randn(5)
    assert ember.equal(t(x2), f(x2))


def test_multiple_outputs_and_tuple_inputs():
    lstm = nn.LSTM(3, 5, batch_first=True)
    x = ember.randn(2, 4, 3)
    h = (ember.zeros(1, 2, 5), ember.zeros(1, 2, 5))
    t = ember.jit.trace(lstm, (x, h))
    out, (hn, cn) = t(x, h)
    e_out, (e_hn, e_cn) = lstm(x, h)
    assert_close(out, e_out)
    assert_close(cn, e_cn)


def test_untraceable_op_is_refused():
    def f(x):
        return ember.tensor(x.numpy() * 2)  # leaves the graph through NumPy
    with pytest.raises(RuntimeError, match="guard|trace"):
        t = ember.jit.trace(f, ember.ones(2))
        t(ember.zeros(2))


def test_non_tensor_example_input_rejected():
    with pytest.raises(RuntimeError, match="example input 1 is a int"):
        ember.jit.trace(lambda x, n: x * n, (ember.ones(2), 3))


def test_check_trace_catches_nondeterministic_python_state():
    counter = [0]

    def f(x):
        counter[0] += 1
        return x * counter[0]  # a Python value baked as a constant
    t = ember.jit.trace(f, ember.ones(2), check_trace=False)
    assert ember.equal(t(ember.ones(2)), ember.ones(2))


def test_is_tracing():
    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1
    ember.jit.trace(f, ember.ones(1), check_trace=False)
    assert seen == [True]
    assert not ember.jit.is_tracing()


def test_printing_inside_trace_is_not_recorded(capsys):
    def f(x):
        print(x)
        return x * 3
    t = ember.jit.trace(f, ember.ones(2), check_trace=False)
    assert "tensor([1., 1.])" in capsys.readouterr().out
    assert [n.kind for n in t.graph.nodes() if n.kind != "prim::Constant"] == ["aten::mul"]


def test_registry_has_no_schema_errors():
    assert ember._C._jit_registration_errors() == []


def test_graph_str_has_source_lines():
    def f(x):
        return x.relu()
    t = ember.jit.trace(f, ember.ones(1))
    assert re.search(r"aten::relu\(%x\) # .*test_jit_trace\.py:\d+", str(t.graph))
