"""Random numbers: Generator state, reproducibility, thread-count independence
and the statistics of every sampling op (fixed seeds, generous tolerances)."""
import numpy as np
import pytest

import ember

FLOATS = [ember.float16, ember.bfloat16, ember.float32, ember.float64]


def to_np(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return t.numpy().astype(np.float64) if t.dtype.is_floating_point else t.numpy()


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(1234)
    yield


def test_philox_known_answer():
    # Random123's known-answer vector for philox4x32-10 (counter 0, key 0).
    assert ember._C._philox_block(0, 0) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert ember._C._philox_block(0, 1) != ember._C._philox_block(0, 0)


# ---- generator state ------------------------------------------------------------------

def test_manual_seed_reproduces_and_different_seeds_differ():
    ember.manual_seed(7)
    a = ember.rand(100)
    b = ember.rand(100)
    ember.manual_seed(7)
    np.testing.assert_array_equal(ember.rand(100).numpy(), a.numpy())
    np.testing.assert_array_equal(ember.rand(100).numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())
    ember.manual_seed(8)
    assert not np.array_equal(ember.rand(100).numpy(), a.numpy())
    assert ember.initial_seed() == 8
    assert ember.manual_seed(3) is ember.default_generator or ember.initial_seed() == 3


def test_generator_objects_are_independent():
    g1 = ember.Generator().manual_seed(42)
    g2 = ember.Generator(device="cpu")
    assert g2.manual_seed(42) is g2
    x = ember.randn(50, generator=g1)
    ember.rand(10)  # the default generator does not disturb g1/g2
    y = ember.randn(50, generator=g2)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert g1.initial_seed() == 42
    assert str(g1.device) == "cpu"
    with pytest.raises(TypeError, match="generator"):
        ember.rand(3, generator=5)


def test_get_set_state_roundtrip():
    g = ember.Generator().manual_seed(5)
    ember.rand(7, generator=g)
    st = g.get_state()
    assert st.dtype == ember.uint8 and st.shape == (16,)
    a = ember.rand(20, generator=g)
    g.set_state(st)
    np.testing.assert_array_equal(ember.rand(20, generator=g).numpy(), a.numpy())
    s = ember.get_rng_state()
    b = ember.randint(0, 100, (30,))
    ember.set_rng_state(s)
    np.testing.assert_array_equal(ember.randint(0, 100, (30,)).numpy(), b.numpy())
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(ember.zeros(16))
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        ember.set_rng_state([1, 2])


def test_seed_values():
    g = ember.Generator()
    s = g.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 63 and g.initial_seed() == s
    assert isinstance(ember.seed(), int)
    ember.manual_seed(-1)  # negative seeds wrap like PyTorch's
    assert ember.initial_seed() == 2 ** 64 - 1
    ember.manual_seed(2 ** 64 - 1)
    ember.manual_seed(3.7)  # torch.manual_seed calls int()
    assert ember.initial_seed() == 3
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        ember.manual_seed(2 ** 64)
    with pytest.raises(TypeError):
        g.manual_seed("x")


@pytest.mark.parametrize("op", [
    lambda g: ember.rand(70001, generator=g),
    lambda g: ember.randn(70001, dtype=ember.float64, generator=g),
    lambda g: ember.randint(-5, 5, (70001,), generator=g),
    lambda g: ember.zeros(70001, dtype=ember.float16).uniform_(-2, 2, generator=g),
    lambda g: ember.zeros(70001).bernoulli_(0.3, generator=g),
    lambda g: ember.multinomial(ember.rand(300, 400, generator=ember.Generator().manual_seed(1)), 40,
                                generator=g),
])
def test_thread_count_independence(op):
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        a = op(ember.Generator().manual_seed(11)).numpy()
        ember.set_num_threads(2)
        b = op(ember.Generator().manual_seed(11)).numpy()
    finally:
        ember.set_num_threads(old)
    np.testing.assert_array_equal(a, b)


def test_non_contiguous_fill_matches_logical_order():
    g = ember.Generator().manual_seed(9)
    ref = ember.rand(4, 6, generator=g).numpy()
    g.manual_seed(9)
    t = ember.zeros(6, 4).t()  # transposed view
    t.uniform_(generator=g)
    np.testing.assert_array_equal(t.numpy(), ref)
    v0 = t._version
    t.normal_()
    assert t._version > v0


# ---- distributions ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_range_and_moments(dtype):
    x = to_np(ember.rand(200000, dtype=dtype))
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.01
    h, _ = np.histogram(x, bins=8, range=(0, 1))
    assert np.all(np.abs(h / len(x) - 1 / 8) < 0.01)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_bounds(dtype):
    t = ember.empty(100000, dtype=dtype).uniform_(-3, 5)
    x = to_np(t)
    assert x.min() >= -3 and x.max() < 5
    assert abs(x.mean() - 1) < 0.05
    narrow = to_np(ember.empty(10000, dtype=dtype).uniform_(1, 1.001))
    assert narrow.min() >= 1 and narrow.max() < 1.001 or dtype in (ember.float16, ember.bfloat16)
    assert np.all(to_np(ember.empty(10, dtype=dtype).uniform_(2, 2)) == 2)


def test_uniform_errors():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        ember.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="uniform_"):
        ember.empty(3, dtype=ember.int64).uniform_()
    with pytest.raises(RuntimeError, match="to-from"):
        ember.empty(3).uniform_(-3e38, 3e38)
    with pytest.raises(RuntimeError, match="rand"):
        ember.rand(3, dtype=ember.int32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_moments(dtype):
    x = to_np(ember.randn(200000, dtype=dtype))
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    assert abs(np.mean(x ** 3)) < 0.05 and abs(np.mean(x ** 4) - 3) < 0.1  # skew, kurtosis
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01


def test_normal_variants():
    x = to_np(ember.empty(100000).normal_(3, 2))
    assert abs(x.mean() - 3) < 0.05 and abs(x.std() - 2) < 0.05
    t = ember.normal(2.0, 0.5, (50000,))
    assert t.dtype == ember.float32 and abs(to_np(t).mean() - 2) < 0.02
    assert ember.normal(0.0, 1.0, size=(2, 3), dtype=ember.float64).dtype == ember.float64
    mean = ember.tensor([0.0, 10.0, -10.0]).view(3, 1).expand(3, 20000)
    std = ember.tensor([1.0, 0.1, 3.0]).view(3, 1)
    y = to_np(ember.normal(mean, std))
    assert y.shape == (3, 20000)
    np.testing.assert_allclose(y.mean(1), [0, 10, -10], atol=0.1)
    np.testing.assert_allclose(y.std(1), [1, 0.1, 3], rtol=0.05)
    z = ember.normal(ember.full((40000,), 5.0, dtype=ember.float64), 2.0)
    assert z.dtype == ember.float64 and abs(to_np(z).std() - 2) < 0.05
    w = ember.normal(1.0, ember.full((40000,), 0.5))
    assert w.dtype == ember.float32 and abs(to_np(w).mean() - 1) < 0.02
    np.testing.assert_array_equal(ember.normal(ember.zeros(3), ember.zeros(3)).numpy(), [0, 0, 0])
    assert ember.normal(ember.zeros(5)).shape == (5,)


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ember.normal(ember.zeros(3), ember.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(TypeError, match="size"):
        ember.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="normal expects floating point mean"):
        ember.normal(ember.zeros(3, dtype=ember.int64), 1.0)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.normal(ember.zeros(3), ember.ones(4))


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.int16, ember.uint8, ember.float32,
                                   ember.float64])
def test_randint_uniform_counts(dtype):
    x = to_np(ember.randint(3, 13, (100000,), dtype=dtype))
    assert ember.randint(3, 13, (2,), dtype=dtype).dtype == dtype
    assert x.min() == 3 and x.max() == 12
    counts = np.bincount(x.astype(np.int64) - 3, minlength=10)
    expected = len(x) / 10
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # 9 degrees of freedom: p ~ 1e-5


def test_randint_forms_and_errors():
    assert ember.randint(5, (3,)).dtype == ember.int64
    assert ember.randint(5, (3,)).numpy().max() < 5
    assert ember.randint(low=2, high=4, size=(50,)).numpy().min() >= 2
    assert ember.randint(10, size=(2, 2)).shape == (2, 2)
    big = ember.randint(-2 ** 62, 2 ** 62, (1000,)).numpy()
    assert big.min() >= -2 ** 62 and big.max() < 2 ** 62 and np.abs(big).max() > 2 ** 60
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        ember.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match="out of bounds for uint8"):
        ember.randint(0, 300, (3,), dtype=ember.uint8)
    with pytest.raises(TypeError, match="size"):
        ember.randint(5)


def test_random_inplace_forms():
    x = ember.empty(10000, dtype=ember.int64).random_(10)
    assert x.numpy().min() == 0 and x.numpy().max() == 9
    y = ember.empty(10000, dtype=ember.int16).random_(-5, 5)
    assert y.numpy().min() == -5 and y.numpy().max() == 4
    z = ember.empty(10000, dtype=ember.uint8).random_()
    assert z.numpy().min() == 0 and z.numpy().max() == 255
    b = ember.empty(1000, dtype=ember.bool).random_()
    assert 300 < b.numpy().sum() < 700
    f = to_np(ember.empty(10000, dtype=ember.float16).random_())
    assert f.min() >= 0 and f.max() <= 2 ** 11 and np.all(f == np.round(f))
    w = ember.empty(1000, dtype=ember.int8).random_(100, None)
    assert w.numpy().min() >= 100
    full = ember.empty(1000, dtype=ember.int64).random_(-2 ** 63, None).numpy()
    assert (full < 0).any() and (full > 0).any()
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=3 >= to=1"):
        ember.empty(3).random_(3, 1)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for int8"):
        ember.empty(3, dtype=ember.int8).random_(0, 1000)
    with pytest.raises(RuntimeError, match="from is out of bounds for float16"):
        ember.empty(3, dtype=ember.float16).random_(-5000, 0)


def test_randperm():
    for n in (0, 1, 2, 17, 1000):
        p = ember.randperm(n).numpy()
        assert p.dtype == np.int64
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    # every position equally likely to hold element 0
    firsts = np.array([ember.randperm(4).numpy()[0] for _ in range(2000)])
    counts = np.bincount(firsts, minlength=4)
    assert np.all(np.abs(counts - 500) < 100)
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32
    np.testing.assert_array_equal(np.sort(ember.randperm(200, dtype=ember.int16).numpy()), np.arange(200))
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        ember.randperm(-1)
    with pytest.raises(RuntimeError, match="n is too large for result tensor type: 'uint8'"):
        ember.randperm(1000, dtype=ember.uint8)


def test_bernoulli():
    p = ember.tensor([0.0, 0.2, 0.5, 0.9, 1.0]).view(5, 1).expand(5, 20000).contiguous()
    s = to_np(ember.bernoulli(p))
    assert set(np.unique(s)) <= {0.0, 1.0}
    np.testing.assert_allclose(s.mean(1), [0, 0.2, 0.5, 0.9, 1], atol=0.015)
    assert ember.bernoulli(p.double()).dtype == ember.float64
    q = ember.bernoulli(ember.zeros(100000), p=0.25)
    assert abs(to_np(q).mean() - 0.25) < 0.01
    r = ember.zeros(50000, dtype=ember.int64).bernoulli_(0.7)
    assert r.dtype == ember.int64 and abs(r.numpy().mean() - 0.7) < 0.01
    t = ember.zeros(3, 20000).bernoulli_(ember.tensor([[0.1], [0.5], [0.8]]))
    np.testing.assert_allclose(to_np(t).mean(1), [0.1, 0.5, 0.8], atol=0.02)
    assert abs(to_np(ember.zeros(40000).bernoulli()).mean()) == 0
    b = ember.zeros(20000, dtype=ember.bool).bernoulli_()
    assert 0.45 < b.numpy().mean() < 0.55
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        ember.zeros(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        ember.bernoulli(ember.tensor([0.5, -0.1]))
    with pytest.raises(RuntimeError, match="bernoulli"):
        ember.bernoulli(ember.tensor([0, 1]))


def test_exponential():
    x = to_np(ember.empty(100000, dtype=ember.float64).exponential_(2.0))
    assert x.min() >= 0 and abs(x.mean() - 0.5) < 0.01 and abs(x.std() - 0.5) < 0.01
    y = to_np(ember.empty(10000, dtype=ember.float16).exponential_())
    assert y.min() >= 0 and abs(y.mean() - 1) < 0.05
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        ember.empty(3).exponential_(0)


def test_multinomial_with_replacement_frequencies():
    probs = ember.tensor([0.1, 0.0, 0.3, 0.6])
    s = ember.multinomial(probs, 100000, replacement=True).numpy()
    assert s.dtype == np.int64 and s.shape == (100000,)
    freq = np.bincount(s, minlength=4) / len(s)
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.3, 0.6], atol=0.01)
    w = ember.tensor([[1.0, 3.0], [5.0, 0.0]], dtype=ember.float64)  # unnormalized weights
    t = ember.multinomial(w, 20000, True).numpy()
    assert t.shape == (2, 20000)
    assert abs(t[0].mean() - 0.75) < 0.02 and np.all(t[1] == 0)


def test_multinomial_without_replacement():
    probs = ember.tensor([[0.5, 0.2, 0.0, 0.3]] * 3)
    s = ember.multinomial(probs, 3).numpy()
    for row in s:
        assert len(set(row)) == 3 and 2 not in row
    # the first draw follows the probabilities
    many = ember.multinomial(ember.tensor([[0.5, 0.2, 0.3]]).expand(20000, 3).contiguous(), 1).numpy()
    freq = np.bincount(many[:, 0], minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.5, 0.2, 0.3], atol=0.015)
    full = ember.multinomial(ember.ones(10), 10).numpy()
    np.testing.assert_array_equal(np.sort(full), np.arange(10))
    assert ember.ones(5).multinomial(2).shape == (2,)


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
        ember.multinomial(ember.zeros(3), 1)
    with pytest.raises(RuntimeError, match=r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"):
        ember.multinomial(ember.ones(3), 4)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([0.5, -0.1]), 1)
    with pytest.raises(RuntimeError, match="probability tensor contains either"):
        ember.multinomial(ember.tensor([0.5, float("nan")]), 1)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        ember.multinomial(ember.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes"):
        ember.multinomial(ember.ones(3, dtype=ember.int64), 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
        ember.multinomial(ember.ones(3), 0)


def test_empty_and_zero_dim_outputs():
    assert ember.rand(0).shape == (0,)
    assert ember.randn(2, 0, 3).shape == (2, 0, 3)
    assert ember.rand(()).shape == ()
    assert 0 <= ember.rand(()).item() < 1
    assert ember.randint(0, 3, ()).shape == ()
    assert ember.empty(0).normal_().shape == (0,)
    assert ember.bernoulli(ember.zeros(0)).shape == (0,)
    assert ember.multinomial(ember.ones(0, 3), 2).shape == (0, 2)


def test_requires_grad_and_kwargs():
    assert ember.rand(2, requires_grad=True).dtype == ember.float32
    with pytest.raises(RuntimeError, match="can require gradients"):
        ember.randint(0, 3, (2,), requires_grad=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        ember.randn(2, foo=3)
    assert ember.rand(size=(2, 3)).shape == (2, 3)
    assert ember.randn([2, 3]).shape == (2, 3)


_VECTOR_BERNOULLI = r"""
import numpy as np, ember
dtypes = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.uint8,
          ember.bool]
for threads in (1, 2):
    ember.set_num_threads(threads)
    for n in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 1000, 70001]:
        for p in [0.0, 1.0, 0.5, 0.1, 0.3, 1e-20, 1 - 1e-16, 0.7071067811865476]:
            for dt in dtypes:
                g1, g2 = ember.Generator().manual_seed(n + 7), ember.Generator().manual_seed(n + 7)
                got = ember.empty(n, dtype=dt).bernoulli_(p, generator=g1)
                ref = ember.empty(n, dtype=dt).bernoulli_(
                    ember.full((n,), p, dtype=ember.float64), generator=g2)
                a, b = got.float().numpy(), ref.float().numpy()
                assert np.array_equal(a, b), (threads, n, p, dt, np.flatnonzero(a != b)[:5])
                # the generators advanced alike: the next draws agree too
                assert ember.rand(3, generator=g1).tolist() == ember.rand(3, generator=g2).tolist()
# a 2-D, a non-contiguous and a dropout mask draw the same stream
x = ember.empty(64, 33)
g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
assert ember.equal(x.bernoulli_(0.25, generator=g1),
                   ember.empty(64, 33).bernoulli_(ember.full((64, 33), 0.25, dtype=ember.float64),
                                                  generator=g2))
t = ember.zeros(40, 50).t()
t.bernoulli_(0.5)
assert set(np.unique(t.numpy())) <= {0.0, 1.0} and 0.4 < t.numpy().mean() < 0.6
print("ok")
"""


@pytest.mark.parametrize("capability", ["default", "best"])
def test_vector_bernoulli_matches_the_scalar_stream(capability):
    # Note [Vector Philox]: bernoulli_ with a scalar p computes sixteen Philox blocks per
    # vector (AVX-512) and compares integers; every value must equal the scalar kernel's (the
    # tensor-p kernel with a constant p draws the same stream), for every size around the
    # vector width and the two-element blocks, every p edge, dtype and thread count, and under
    # each CPU capability's vector width.
    from child_env import run_at_capability
    assert run_at_capability(_VECTOR_BERNOULLI, capability).strip() == "ok"
