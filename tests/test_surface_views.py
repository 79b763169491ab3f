"""Views and shape helpers of the torch surface that the op registry's generic
tests do not reach: memory formats, in-place metadata ops, def_op's forms."""
import warnings

import numpy as np
import pytest

import ember


def test_function_method_inplace_out_come_from_one_declaration(device):
    a = ember.tensor([3.0, -4.0], device=device)
    b = ember.tensor([4.0, 3.0], device=device)
    assert ember.hypot(a, b).tolist() == [5.0, 5.0]
    assert a.hypot(b).tolist() == [5.0, 5.0]
    out = ember.empty(2, device=device)
    r = ember.hypot(a, b, out=out)
    assert r is out and out.tolist() == [5.0, 5.0]
    # an empty out= is resized silently, one of another shape with PyTorch's warning
    e = ember.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.hypot(a, b, out=e)
    assert e.shape == (2,)
    w = ember.empty(3, device=device)
    with pytest.warns(UserWarning, match=r"had shape \[3\], which does not match the required"):
        ember.hypot(a, b, out=w)
    assert w.tolist() == [5.0, 5.0]
    with pytest.raises(TypeError, match="out"):
        ember.hypot(a, b, out=3)
    v = a._version
    assert a.hypot_(b) is a and a.tolist() == [5.0, 5.0] and a._version > v


def test_inplace_composite_under_autograd(device):
    x = ember.tensor([0.5, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    y = x * 1
    y.xlogy_(ember.tensor([2.0, 3.0], dtype=ember.float64, device=device))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.log([2.0, 3.0]))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.hypot_(x)


def test_clone_memory_format(device):
    x = ember.randn(4, 5, device=device).t()
    assert x.clone().stride() == (1, 5)
    assert x.clone(memory_format=ember.preserve_format).stride() == (1, 5)
    assert x.clone(memory_format=ember.contiguous_format).stride() == (4, 1)
    y = ember.randn(2, 3, 4, 5, device=device)
    cl = y.clone(memory_format=ember.channels_last)
    assert cl.stride() == (60, 1, 15, 3)
    assert ember.equal(cl, y)
    # non-dense input: dims ordered by stride, then packed
    z = ember.randn(5, 8, device=device).t()[::2]
    assert z.clone().stride() == (1, 4)
    assert repr(ember.channels_last) == "ember.channels_last"
    with pytest.raises(RuntimeError, match="rank 4"):
        ember.randn(3, 3, device=device).clone(memory_format=ember.channels_last)


def test_inplace_view_ops(device):
    a = ember.zeros(2, 1, 3, device=device)
    assert a.squeeze_() is a and a.shape == (2, 3)
    assert a.unsqueeze_(0) is a and a.shape == (1, 2, 3)
    b = ember.zeros(2, 3, device=device)
    b.t_()
    assert b.shape == (3, 2) and b.stride() == (1, 3)
    b.transpose_(0, 1)
    assert b.shape == (2, 3)
    b.swapdims_(0, 1)
    assert b.shape == (3, 2)
    c = ember.arange(6.0, device=device)
    c.as_strided_((2, 2), (1, 2))
    assert c.tolist() == [[0.0, 2.0], [1.0, 3.0]]
    x = ember.randn(3, 1, requires_grad=True, dtype=ember.float64, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.squeeze_()
    y = x * 2
    y.unsqueeze_(0)
    assert y.shape == (1, 3, 1)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0]] * 3


def test_resize(device):
    a = ember.arange(6.0, device=device)
    a.resize_(2, 2)
    assert a.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    a.resize_(3, 3)
    assert a.shape == (3, 3) and a.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    b = ember.zeros(1, device=device)
    b.resize_as_(ember.zeros(2, 5))
    assert b.shape == (2, 5)
    with pytest.raises(RuntimeError, match="negative"):
        b.resize_(-1)
    with pytest.raises(RuntimeError, match="require grad"):
        ember.zeros(2, requires_grad=True).resize_(3)


def test_fill_diagonal(device):
    a = ember.zeros(3, 3, device=device)
    a.fill_diagonal_(5)
    assert a.tolist() == np.diag([5.0] * 3).tolist()
    tall = ember.zeros(7, 3, device=device)
    tall.fill_diagonal_(1, wrap=True)
    ref = np.zeros((7, 3))
    np.fill_diagonal(ref, 1, wrap=True)
    assert tall.tolist() == ref.tolist()
    cube = ember.zeros(2, 2, 2, device=device)
    cube.fill_diagonal_(3)
    assert cube[1, 1, 1].item() == 3 and cube.sum().item() == 6
    with pytest.raises(RuntimeError, match="equal length"):
        ember.zeros(2, 3, 2, device=device).fill_diagonal_(1)
    x = ember.ones(2, 2, dtype=ember.float64, requires_grad=True, device=device)
    y = x * 3
    y.fill_diagonal_(0)
    y.sum().backward()
    assert x.grad.tolist() == [[0.0, 3.0], [3.0, 0.0]]


def test_small_tensor_methods(device):
    a = ember.zeros(2, 3, device=device)
    assert a.is_same_size(ember.ones(2, 3)) and not a.is_same_size(ember.ones(3, 2))
    assert ember.tensor([1.5], device=device).is_nonzero()
    assert not ember.tensor(0, device=device).is_nonzero()
    with pytest.raises(RuntimeError, match="ambiguous"):
        ember.ones(2, device=device).is_nonzero()
    assert a.H.shape == (3, 2) and a.mT.shape == (3, 2)
    assert ember.zeros(4, 2, 3).mH.shape == (4, 3, 2)
    assert a.element_size() == 4 and a.itemsize == 4 and a.nbytes == 24
    assert ember.zeros(2, 3, 4).dim_order() == (0, 1, 2)
    assert ember.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert a.get_device() == (-1 if device == "cpu" else 0)
    x = ember.tensor([1.0, -2.0, 3.0], device=device)
    assert x.where(x > 0, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert ember.ones(2, 3).sum_to_size(1, 3).tolist() == [[2.0, 2.0, 2.0]]


def test_apply_and_map():
    a = ember.tensor([1.0, 2.0, 3.0])
    assert a.apply_(lambda v: v * 10) is a and a.tolist() == [10.0, 20.0, 30.0]
    a.map_(ember.tensor([1.0]), lambda x, y: x + y)
    assert a.tolist() == [11.0, 21.0, 31.0]


def test_unfold_is_a_view(device):
    x = ember.arange(8.0, device=device)
    u = x.unfold(0, 3, 2)
    assert u.shape == (3, 3) and u.stride() == (2, 1)
    x[2] = 100
    assert u[0, 2].item() == 100 and u[1, 0].item() == 100
    assert type(ember.randn(4, requires_grad=True).unfold(0, 2, 1).grad_fn).__name__ == "UnfoldBackward0"
    with pytest.raises(RuntimeError, match="step"):
        x.unfold(0, 2, 0)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(0, 9, 1)


def test_shift_operators(device):
    a = ember.tensor([1, -8, 5], device=device)
    assert (a << 2).tolist() == [4, -32, 20]
    assert (a >> 1).tolist() == [0, -4, 2]
    assert (2 << ember.tensor([1, 3], device=device)).tolist() == [4, 16]
    assert (a << 64).tolist() == [0, 0, 0]
    assert (a >> 70).tolist() == [0, -1, 0]
    b = a.clone()
    b <<= 1
    assert b.tolist() == [2, -16, 10]
    with pytest.raises(NotImplementedError, match="Float"):
        ember.ones(2) << 1


def test_split_family_returns_views(device):
    x = ember.arange(10.0, device=device)
    parts = ember.tensor_split(x, 3)
    assert isinstance(parts, tuple) and [p.numel() for p in parts] == [4, 3, 3]
    parts[0][0] = 42
    assert x[0].item() == 42
    assert [p.numel() for p in ember.tensor_split(x, ember.tensor([2, 7]))] == [2, 5, 3]
    assert len(ember.tensor_split(x, ember.tensor(4))) == 4
    assert [p.shape for p in ember.hsplit(ember.zeros(2, 6), [1, 4])] == [(2, 1), (2, 3), (2, 2)]


def test_meshgrid_and_tri_indices(device):
    a, b = ember.meshgrid(ember.arange(3, device=device), ember.arange(2, device=device), indexing="xy")
    assert a.shape == (2, 3)
    assert ember.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.triu_indices(3, 3, dtype=ember.float32)


def test_empty_strided(device):
    t = ember.empty_strided((2, 3), (1, 2), device=device)
    assert t.stride() == (1, 2) and t.shape == (2, 3)
    n = t.new_empty_strided((4,), (2,), dtype=ember.float64)
    assert n.stride() == (2,) and n.dtype == ember.float64
    with pytest.raises(RuntimeError, match="mismatch"):
        ember.empty_strided((2, 3), (1,))
