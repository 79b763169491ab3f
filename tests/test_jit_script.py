"""ember.jit.script: each construct of the supported subset, compiled and run against
Python, and the errors for what is not supported."""
from typing import Optional

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import Tensor
from ember.testing import assert_close


def check(fn, *args):
    s = ember.jit.script(fn)
    got, want = s(*args), fn(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_close(g, w)
    else:
        assert_close(got, want)
    return s


def test_if_elif_else():
    def f(x, n: int):
        if n > 2:
            y = x * 2
        elif n == 2:
            y = x + 1
        else:
            y = -x
        return y
    for n in (0, 2, 5):
        check(f, ember.randn(3), n)


def test_data_dependent_if_on_tensor():
    def f(x):
        if x.sum() > 0:
            return x
        else:
            return -x
    s = check(f, ember.ones(2))
    assert_close(s(-ember.ones(2)), ember.ones(2))


def test_early_return():
    def f(x, flag: bool):
        if flag:
            return x * 3
        y = x + 1
        return y * 2
    check(f, ember.ones(2), True)
    check(f, ember.ones(2), False)


def test_for_range_and_while():
    def f(x, n: int):
        acc = ember.zeros_like(x)
        for i in range(n):
            acc = acc + x * i
        k = 0
        while k < 3:
            acc = acc * 2
            k += 1
        return acc
    check(f, ember.randn(4), 5)


def test_range_start_stop_step():
    def f(x):
        total = 0
        for i in range(1, 10, 3):
            total += i
        return x * total
    check(f, ember.ones(2))


def test_lists_append_index_len_and_tuples():
    def f(x) -> tuple[Tensor, int]:
        parts: list[Tensor] = []
        for i in range(x.size(0)):
            parts.append(x[i] * i)
        a, b = parts[0], parts[-1]
        return ember.stack(parts).sum(0) + a - b, len(parts)
    check(f, ember.randn(4, 3))


def test_for_over_list_and_tuple_unpacking():
    def f(xs: list[Tensor]):
        out = xs[0]
        for t in xs:
            out = out + t
        return out
    check(f, [ember.ones(2), ember.ones(2) * 2])


def test_optional_refinement():
    def f(x, bias: Optional[Tensor] = None):
        if bias is not None:
            x = x + bias
        return x
    s = check(f, ember.ones(2), ember.ones(2))
    assert_close(s(ember.ones(2)), ember.ones(2))


def test_int_float_bool_str_args():
    def f(x, a: int, b: float, c: bool, mode: str):
        if c and mode == "scale":
            return x * a + b
        return x
    check(f, ember.ones(3), 2, 0.5, True, "scale")
    check(f, ember.ones(3), 2, 0.5, True, "other")


def test_tensor_methods_and_indexing():
    def f(x):
        y = x[:, 1:3].contiguous().view(-1)
        z = x.transpose(0, 1)[0]
        return y.sum() + z.mean() + x.shape[0] + x.float().max()
    check(f, ember.randn(3, 4))


def test_functional_calls():
    def f(x, w):
        return F.softmax(F.relu(F.linear(x, w)), dim=-1)
    check(f, ember.randn(2, 3), ember.randn(4, 3))


def test_assert_and_raise():
    def f(x):
        assert x.dim() == 2, "needs a matrix"
        if x.shape[0] == 0:
            raise ValueError("empty")
        return x.t()
    s = check(f, ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="needs a matrix"):
        s(ember.ones(3))
    with pytest.raises(ValueError, match="empty"):
        s(ember.ones(0, 3))


def test_module_with_submodules_attributes_and_modulelist():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.scale = 0.5
            self.norm = nn.LayerNorm(4)

        def forward(self, x):
            for layer in self.layers:
                x = F.relu(layer(x)) * self.scale
            return self.norm(x)

    n = Net()
    s = ember.jit.script(n)
    x = ember.randn(2, 4)
    assert_close(s(x), n(x))
    assert s.layers[1].weight is n.layers[1].weight


def test_conv_batchnorm_train_and_eval():
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 2))
    s = ember.jit.script(m)
    x = ember.randn(3, 2, 4, 4)
    assert_close(s(x), m(x))  # training: both update the (shared) running stats
    assert m[1].num_batches_tracked.item() == 2
    m.eval()
    s.eval()
    assert_close(s(x), m(x))


def test_method_calls_and_self_helper():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def helper(self, x, k: int):
            return self.lin(x) * k

        def forward(self, x):
            return self.helper(x, 2) + self.helper(x, 3)

    m = M()
    check_m = ember.jit.script(m)
    x = ember.randn(2, 3)
    assert_close(check_m(x), m(x))


def test_calls_other_python_functions():
    def inner(x, k: int):
        return x * k

    def outer(x):
        return inner(x, 2) + inner(x, 3)
    check(outer, ember.ones(3))


def test_is_scripting():
    def f(x):
        if ember.jit.is_scripting():
            return x + 1
        return x
    s = ember.jit.script(f)
    assert ember.equal(s(ember.zeros(1)), ember.ones(1))


def test_unused():
    @ember.jit.unused
    def slow(x):
        return x

    def f(x, flag: bool):
        if flag:
            return slow(x)
        return x + 1
    s = ember.jit.script(f)
    assert ember.equal(s(ember.zeros(1), False), ember.ones(1))
    with pytest.raises(RuntimeError, match="unused"):
        s(ember.zeros(1), True)


@pytest.mark.parametrize("src, msg", [
    ("def f(x):\n    return [i for i in x]\n", "ListComp"),
    ("def f(x):\n    with open('a'):\n        pass\n    return x\n", "With"),
    ("def f(x):\n    for i in range(3):\n        break\n    return x\n", "break"),
])
def test_unsupported_constructs_name_line_and_hint(tmp_path, src, msg):
    import importlib.util
    p = tmp_path / "mod_unsupported.py"
    p.write_text(src)
    spec = importlib.util.spec_from_file_location("mod_unsupported", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(ember.jit.ScriptError, match=rf"{msg}.*mod_unsupported\.py:\d+.*"
                                                    r"ember\.jit\.ignore.*trace"):
        ember.jit.script(mod.f)


def test_script_code_and_save_load(tmp_path):
    def f(x, n: int):
        for i in range(n):  # noqa: B007
            x = x * 2
        return x
    s = ember.jit.script(f)
    s.save(str(tmp_path / "f.pt"))
    g = ember.jit.load(str(tmp_path / "f.pt"))
    assert ember.equal(g(ember.ones(2), 3), ember.ones(2) * 8)
    assert "for i in range(n):" in s.code
