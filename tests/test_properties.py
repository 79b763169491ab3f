"""Property tests (hypothesis): random shapes, strides and broadcasting against NumPy."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

SETTINGS = settings(max_examples=60, deadline=None)


def strided_view(arr, data):
    """A random non-contiguous ember view holding arr's values: a permutation of a
    step-sliced region of a larger buffer."""
    perm = data.draw(st.permutations(range(arr.ndim)))
    steps = [data.draw(st.integers(1, 3)) for _ in range(arr.ndim)]
    inv = np.argsort(perm)
    base_shape = [arr.shape[p] * s for p, s in zip(perm, steps)]
    base = np.zeros(base_shape, dtype=arr.dtype)
    region = base[tuple(slice(None, None, s) for s in steps)]
    region[...] = arr.transpose(perm)
    t = ember.from_numpy(base)
    # The step-sliced region as a view (as_strided), then permuted back.
    sizes = [arr.shape[p] for p in perm]
    strides = [base.strides[d] // base.itemsize * steps[d] for d in range(arr.ndim)]
    v = t.as_strided(sizes, strides, 0).permute(*inv.tolist())
    return v


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=5),
       op=st.sampled_from(["add", "sub", "mul", "maximum", "minimum", "eq", "lt"]),
       data=st.data())
def test_binary_broadcast_noncontiguous(shapes, op, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.standard_normal(shapes.input_shapes[0])
    b = rng.standard_normal(shapes.input_shapes[1])
    ta = strided_view(np.asarray(a), data) if np.ndim(a) else ember.from_numpy(np.asarray(a))
    tb = ember.from_numpy(np.asarray(b).copy())
    np.testing.assert_array_equal(ta.numpy(), a)
    ref = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "maximum": "maximum",
                       "minimum": "minimum", "eq": "equal", "lt": "less"}[op])(a, b)
    out = getattr(ember, op)(ta, tb)
    assert tuple(out.shape) == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


@SETTINGS
@given(arr=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=5),
                      elements=st.floats(-1e3, 1e3)),
       to=st.sampled_from(["float32", "int64", "int32", "bool", "float16", "uint8"]),
       data=st.data())
def test_copy_between_dtypes_and_layouts(arr, to, data):
    src = strided_view(arr, data)
    dst = ember.from_numpy(np.zeros(arr.shape, dtype=to)) if to != "bool" else \
        ember.from_numpy(np.zeros(arr.shape, dtype=bool))
    dst.copy_(src)
    if to == "bool":
        expect = arr != 0
    elif to in ("int64", "int32"):
        expect = np.trunc(arr).astype(to)
    elif to == "uint8":
        return  # float -> uint8 of negatives is undefined behaviour in C++ and NumPy alike
    else:
        expect = arr.astype(to)
    np.testing.assert_array_equal(dst.numpy(), expect)


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=0, max_dims=5, max_side=4), data=st.data())
def test_view_reshape_permute_chain(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = ember.from_numpy(a.copy())
    n = a.size
    # reshape to a random factorization and back
    new = []
    rest = n
    while rest > 1 and len(new) < 4:
        f = data.draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
        new.append(f)
        rest //= f
    new.append(rest)
    r = t.reshape(*new)
    np.testing.assert_array_equal(r.numpy(), a.reshape(new))
    if a.ndim >= 1:
        perm = data.draw(st.permutations(range(a.ndim)))
        p = t.permute(*perm)
        np.testing.assert_array_equal(p.numpy(), a.transpose(perm))
        np.testing.assert_array_equal(p.reshape(-1).numpy(), a.transpose(perm).reshape(-1))
        np.testing.assert_array_equal(p.contiguous().numpy(), a.transpose(perm))
        assert p.contiguous().is_contiguous()
        assert p.data_ptr() == t.data_ptr()  # views never copy


@SETTINGS
@given(arr=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=6),
                      elements=st.floats(-5, 5, width=32)),
       op=st.sampled_from(["exp", "tanh", "sigmoid", "abs", "neg", "sqrt", "floor"]), data=st.data())
def test_unary_on_random_views(arr, op, data):
    t = strided_view(arr, data) if arr.ndim else ember.from_numpy(arr.copy())
    ref = {"exp": np.exp, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
           "abs": np.abs, "neg": np.negative, "sqrt": lambda x: np.sqrt(np.abs(x)),
           "floor": np.floor}[op]
    x = t.abs() if op == "sqrt" else t
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(getattr(ember, op)(x).numpy(), ref(arr.astype(np.float64)),
                                   rtol=2e-6, atol=1e-6)
