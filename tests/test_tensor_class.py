"""The Tensor class itself: the legacy constructor, subclassing, and Python object identity."""
import numpy as np
import pytest

import ember


def test_legacy_constructor_forms():
    a = ember.Tensor(2, 3)
    assert a.shape == (2, 3) and a.dtype == ember.get_default_dtype()
    assert ember.Tensor().shape == (0,)
    b = ember.Tensor([1, 2])
    assert b.dtype == ember.float32
    np.testing.assert_array_equal(b.numpy(), [1.0, 2.0])
    c = ember.Tensor(np.arange(3))
    assert c.dtype == ember.float32
    alias = ember.Tensor(b)
    assert alias._storage_ptr() == b._storage_ptr()
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ember.Tensor("x")
    with pytest.raises(TypeError, match="only the 'device' keyword"):
        ember.Tensor(2, dtype=ember.int64)


def test_identity_is_preserved_through_ops():
    x = ember.zeros(3)
    assert x.add_(1) is x
    assert x.t()._base is x
    y = ember.Tensor(4)
    assert y.fill_(2.0) is y  # constructor-made tensors claim their identity on first use
    v = x.view(3)
    assert v._base is x and v.view(3)._base is x


def test_subclass_instances_survive_round_trips():
    class Marked(ember.Tensor):
        pass

    m = Marked(2)
    m.note = "kept"
    r = m.zero_()
    assert r is m and type(r) is Marked and r.note == "kept"
    assert isinstance(m + 1, ember.Tensor)


def test_linalg_namespace():
    import ember.linalg as la
    x = ember.tensor([[3.0, 4.0], [0.0, 0.0]])
    assert la.vector_norm(x).item() == 5.0
    np.testing.assert_allclose(la.norm(x, dim=1).numpy(), [5.0, 0.0])
    assert la.matrix_norm(x).item() == 5.0
    np.testing.assert_allclose(la.vector_norm(x, ord=1, dim=0).numpy(), [3.0, 4.0])
    np.testing.assert_allclose(la.matmul(x, x).numpy(), x.numpy() @ x.numpy())
    # every matrix norm order is supported now (through the SVD for 'nuc' and +-2)
    assert abs(la.matrix_norm(x, ord="nuc").item() - 5.0) < 1e-6
    with pytest.raises(RuntimeError, match="not supported"):
        la.matrix_norm(x, ord=3)
