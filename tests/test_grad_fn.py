"""grad_fn objects: one Python type per node kind named as in PyTorch, the
autograd.graph.Node base, metadata and the saved tensors of common nodes."""
import pytest

import ember
from ember.autograd.graph import Node


def test_node_types_are_named_like_pytorch(device):
    x = ember.randn(3, dtype=ember.float64, requires_grad=True, device=device)
    y = x * 2
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn.name() == "MulBackward0"
    assert isinstance(y.grad_fn, Node)
    assert isinstance(y.grad_fn, ember._C._Node)
    z = y.exp()
    assert type(z.grad_fn).__name__ == "ExpBackward0"
    assert type(z.grad_fn) is not type(y.grad_fn)
    # one type per name, reused
    assert type((x * 3).grad_fn) is type(y.grad_fn)
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and isinstance(acc, Node)
    assert acc.variable is x
    assert not isinstance(3, Node)


def test_saved_tensors(device):
    a = ember.randn(3, dtype=ember.float64, requires_grad=True, device=device)
    b = ember.randn(3, dtype=ember.float64, requires_grad=True, device=device)
    y = a * b
    assert y.grad_fn._saved_self is a or ember.equal(y.grad_fn._saved_self, a)
    assert ember.equal(y.grad_fn._saved_other, b)
    e = a.exp()
    assert ember.equal(e.grad_fn._saved_result, e)
    s = a.sin()
    assert ember.equal(s.grad_fn._saved_self, a)
    with pytest.raises(AttributeError):
        _ = y.grad_fn._saved_nothing
    y.sum().backward()
    with pytest.raises(RuntimeError, match="freed"):
        _ = y.grad_fn._saved_self


def test_metadata_outlives_the_wrapper(device):
    x = ember.randn(2, requires_grad=True, device=device)
    y = x + 1
    y.grad_fn.metadata["tag"] = 7
    assert y.grad_fn.metadata == {"tag": 7}
    z = x + 2
    assert z.grad_fn.metadata == {}


def test_prehook(device):
    x = ember.ones(2, requires_grad=True, device=device)
    y = x * 3
    seen = []
    h = y.grad_fn.register_prehook(lambda grads: seen.append(grads[0]))
    y.sum().backward()
    assert len(seen) == 1 and bool((seen[0] == 1).all())
    h.remove()


def test_new_op_nodes(device):
    x = ember.randn(3, 3, dtype=ember.float64, requires_grad=True, device=device)
    assert type(ember.linalg.inv(x + 3 * ember.eye(3, dtype=ember.float64, device=device)).grad_fn).__name__ == \
        "LinalgInvExBackward0"
    assert type(x.unfold(0, 2, 1).grad_fn).__name__ == "UnfoldBackward0"
    assert type(ember.lgamma(x.abs() + 1).grad_fn).__name__ == "LgammaBackward0"


def test_fixed_node_names(device):
    x = ember.rand(3, dtype=ember.float64, requires_grad=True, device=device)
    assert type(ember.lerp(x, x * 2, 0.5).grad_fn).__name__ == "LerpBackward0"
    assert type(ember.lerp(x, x * 2, x).grad_fn).__name__ == "LerpBackward1"
    assert type(ember.nan_to_num(x).grad_fn).__name__ == "NanToNumBackward0"
    r = 1 / x
    assert type(r.grad_fn).__name__ == "MulBackward0"
    assert type(r.grad_fn.next_functions[0][0]).__name__ == "ReciprocalBackward0"
    np_x = x.detach().numpy()
    assert abs((2 / x).sum().item() - (2 / np_x).sum()) < 1e-12


def test_fixed_node_gradients(device):
    from ember.autograd import gradcheck, gradgradcheck
    s = ember.rand(3, dtype=ember.float64, requires_grad=True, device=device)
    e = ember.rand(3, dtype=ember.float64, requires_grad=True, device=device)
    w = ember.rand(3, dtype=ember.float64, requires_grad=True, device=device)
    assert gradcheck(lambda a, b, c: ember.lerp(a, b, c), (s, e, w))
    assert gradgradcheck(lambda a, b, c: ember.lerp(a, b, c), (s, e, w))
    assert gradcheck(lambda a, b: ember.lerp(a, b, 0.3), (s, e))
    x = ember.tensor([1.0, float("nan"), float("inf"), -2.0], dtype=ember.float64, requires_grad=True, device=device)
    ember.nan_to_num(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert gradcheck(lambda a: 2.5 / a, (s + 1,))
