"""nn.Module, nn.Parameter/Buffer and the containers: registration, iteration order,
state_dict, conversion, hooks (backward hooks with real gradients) and reprs."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn as nn
from ember.nn.modules.module import _IncompatibleKeys


class Lin(nn.Module):
    """A tiny Linear built from ember ops (the real one lives in nn/modules/linear.py)."""

    def __init__(self, i, o, bias=True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = i, o
        self.weight = nn.Parameter(ember.randn(o, i, dtype=dtype))
        if bias:
            self.bias = nn.Parameter(ember.randn(o, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        y = x @ self.weight.T
        return y + self.bias if self.bias is not None else y

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Act(nn.Module):
    def forward(self, x):
        return x.relu()


class BN(nn.Module):
    """Parameters plus persistent and non-persistent buffers, as BatchNorm has."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(n))
        self.register_buffer("running_mean", ember.zeros(n))
        self.register_buffer("num_batches_tracked", ember.tensor(0))
        self.register_buffer("scratch", ember.zeros(n), persistent=False)

    def forward(self, x):
        return x * self.weight + self.running_mean


# ---- Parameter / Buffer -----------------------------------------------------------------

def test_parameter_basics():
    x = ember.randn(2, 3)
    p = nn.Parameter(x)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and not x.requires_grad
    assert p._storage_ptr() == x._storage_ptr()
    assert not nn.Parameter(x, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    # a non-leaf becomes a leaf parameter
    y = ember.randn(2, requires_grad=True) * 2
    q = nn.Parameter(y)
    assert q.is_leaf and q.grad_fn is None
    (p * 3).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 3), 3.0, np.float32))


def test_parameter_repr():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert str(p) == repr(p)
    q = nn.Parameter(ember.tensor([1.0]), requires_grad=False)
    assert repr(q) == "Parameter containing:\ntensor([1.])"


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    for c in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(c) is nn.Parameter and c.requires_grad
        assert c._storage_ptr() != p._storage_ptr()
        np.testing.assert_array_equal(c.detach().numpy(), [1.0, 2.0])
    q = nn.Parameter(ember.ones(2), requires_grad=False)
    assert not copy.deepcopy(q).requires_grad and not pickle.loads(pickle.dumps(q)).requires_grad
    memo = {}
    assert copy.deepcopy([p, p], memo)[1] is memo[id(p)]


def test_buffer_and_uninitialized():
    b = nn.Buffer(ember.zeros(2), persistent=False)
    assert isinstance(b, nn.Buffer) and not isinstance(ember.zeros(2), nn.Buffer)
    m = nn.Module()
    m.b = b
    m.c = nn.Buffer(ember.ones(1))
    assert list(m._buffers) == ["b", "c"] and "b" in m._non_persistent_buffers_set
    assert list(m.state_dict()) == ["c"]
    u = nn.UninitializedParameter()
    assert repr(u) == "<UninitializedParameter>" and nn.parameter.is_lazy(u)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        _ = u.shape
    u.materialize((2, 3))
    assert type(u) is nn.Parameter and u.shape == (2, 3) and u.requires_grad


# ---- registration -----------------------------------------------------------------------

def test_attribute_registration():
    m = Lin(2, 3)
    assert list(m._parameters) == ["weight", "bias"]
    m.act = Act()
    m.register_buffer("buf", ember.zeros(1))
    assert list(m._modules) == ["act"] and list(m._buffers) == ["buf"]
    # assigning None keeps the slot
    m.bias = None
    assert m.bias is None and "bias" in m._parameters
    m.act = None
    assert m.act is None and "act" in m._modules
    m.buf = None
    assert m.buf is None
    # a plain attribute replaced by a Parameter moves into _parameters
    m.plain = 3
    m.plain = nn.Parameter(ember.zeros(1))
    assert "plain" in m._parameters and "plain" not in m.__dict__
    # re-assigning a buffer with a plain tensor keeps it a buffer
    m.buf = ember.ones(2)
    assert "buf" in m._buffers
    del m.buf
    assert "buf" not in m._buffers
    del m.plain
    with pytest.raises(AttributeError, match="'Lin' object has no attribute 'plain'"):
        _ = m.plain


def test_registration_errors():
    m = Lin(2, 3)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as parameter 'weight' \(ember.nn.Parameter or None expected\)"):
        m.weight = 3
    with pytest.raises(TypeError, match=r"cannot assign 'ember.FloatTensor' as parameter 'weight'"):
        m.weight = ember.zeros(3, 2)
    m.child = Act()
    with pytest.raises(TypeError, match=r"cannot assign 'str' as child module 'child' \(ember.nn.Module or None expected\)"):
        m.child = "x"
    m.register_buffer("b", ember.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'b'"):
        m.b = 1
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", ember.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="be empty string"):
        m.register_buffer("", None)
    with pytest.raises(TypeError, match="cannot assign 'ember.FloatTensor' object to parameter 'q'"):
        m.register_parameter("q", ember.zeros(1))
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("z", 3)
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'c'"):
        m.register_buffer("c", 3)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    with pytest.raises(AttributeError, match="'Act' object has no attribute 'foo'"):
        _ = Act().foo
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'x'"):
        nn.Module(x=1)


def test_named_members_order_and_dedup():
    net = nn.Sequential(Lin(2, 3), Act(), Lin(3, 3))
    shared = Lin(3, 3)
    net.add_module("s1", shared)
    net.add_module("s2", shared)
    net[2].weight = shared.weight  # a parameter shared between two modules
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "s1.bias"]
    all_names = [n for n, _ in net.named_parameters(remove_duplicate=False)]
    assert all_names == ["0.weight", "0.bias", "2.weight", "2.bias", "s1.weight", "s1.bias",
                         "s2.weight", "s2.bias"]
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_parameters(prefix="net")][0] == "net.0.weight"
    assert [n for n, _ in net.named_modules()] == ["", "0", "1", "2", "s1"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "0", "1", "2", "s1", "s2"]
    assert [n for n, _ in net.named_children()] == ["0", "1", "2", "s1"]
    assert list(net.children())[1] is net[1]
    assert list(net.named_parameters(recurse=False)) == []
    bn = BN(2)
    outer = nn.Sequential(OrderedDict(bn=bn))
    assert [n for n, _ in outer.named_buffers()] == ["bn.running_mean", "bn.num_batches_tracked", "bn.scratch"]
    assert len(list(outer.buffers(recurse=False))) == 0


def test_get_submodule_parameter_buffer():
    net = nn.Sequential(OrderedDict(a=nn.Sequential(BN(2)), b=Lin(2, 2)))
    assert net.get_submodule("") is net
    assert net.get_submodule("a.0") is net.a[0]
    assert net.get_parameter("a.0.weight") is net.a[0].weight
    assert net.get_buffer("a.0.running_mean") is net.a[0].running_mean
    with pytest.raises(AttributeError, match="Sequential has no attribute `c`"):
        net.get_submodule("c")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("b.weight")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        net.get_parameter("a.0.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("b.weight")
    net.set_submodule("a.0", Act())
    assert isinstance(net.a[0], Act)


def test_dir_lists_members():
    m = Lin(2, 2)
    m.register_buffer("rb", ember.zeros(1))
    m.sub = Act()
    d = dir(m)
    assert {"weight", "bias", "rb", "sub", "forward", "in_features"} <= set(d)
    assert d == sorted(d)
    assert "0" not in dir(nn.Sequential(Act()))


# ---- state_dict -----------------------------------------------------------------------

def _net():
    return nn.Sequential(OrderedDict(fc=Lin(3, 2), bn=BN(2), act=Act()))


def test_state_dict_keys_and_values():
    net = _net()
    net.register_buffer("top", ember.ones(1))
    net.register_parameter("p", nn.Parameter(ember.ones(1)))
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["p", "top", "fc.weight", "fc.bias", "bn.weight", "bn.running_mean",
                        "bn.num_batches_tracked"]
    assert not sd["fc.weight"].requires_grad and type(sd["fc.weight"]) is ember.Tensor
    assert sd["fc.weight"]._storage_ptr() == net.fc.weight._storage_ptr()
    kept = net.state_dict(keep_vars=True)
    assert kept["fc.weight"] is net.fc.weight
    assert list(net.fc.state_dict(prefix="x.")) == ["x.weight", "x.bias"]
    assert sd._metadata[""] == {"version": 1} and "fc" in sd._metadata
    dest = OrderedDict()
    assert net.bn.state_dict(destination=dest) is dest


def test_state_dict_round_trip_through_save_load(tmp_path):
    a, b = _net(), _net()
    with ember.no_grad():
        a.bn.running_mean.fill_(3.0)
        a.bn.num_batches_tracked.fill_(7)
    path = tmp_path / "net.ember"
    ember.save(a.state_dict(), path)
    res = b.load_state_dict(ember.load(path))
    assert repr(res) == "<All keys matched successfully>" and res == _IncompatibleKeys([], [])
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    assert b.bn.num_batches_tracked.item() == 7
    # loading copies in place: the Parameter objects stay the same
    w = b.fc.weight
    b.load_state_dict(a.state_dict())
    assert b.fc.weight is w and w.requires_grad


def test_load_state_dict_strict_and_errors():
    net = _net()
    sd = net.state_dict()
    del sd["fc.bias"]
    sd["fc.extra"] = ember.zeros(1)
    sd["nope.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Sequential:\n"
        '\tMissing key(s) in state_dict: "fc.bias". \n'
        '\tUnexpected key(s) in state_dict: "nope.weight", "fc.extra". ')
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc.bias"] and res.unexpected_keys == ["nope.weight", "fc.extra"]
    assert repr(res) == ("_IncompatibleKeys(missing_keys=['fc.bias'], "
                         "unexpected_keys=['nope.weight', 'fc.extra'])")
    lin = Lin(2, 3)
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": ember.zeros(3, 3), "bias": ember.zeros(4)})
    assert str(e.value) == (
        "Error(s) in loading state_dict for Lin:\n"
        "\tsize mismatch for weight: copying a param with shape ember.Size([3, 3]) from checkpoint, "
        "the shape in current model is ember.Size([3, 2]).\n"
        "\tsize mismatch for bias: copying a param with shape ember.Size([4]) from checkpoint, "
        "the shape in current model is ember.Size([3]).")
    with pytest.raises(RuntimeError, match='expected ember.Tensor or Tensor-like object from checkpoint'):
        lin.load_state_dict({"weight": 1.0, "bias": ember.zeros(3)})
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        lin.load_state_dict([1])


def test_load_state_dict_assign():
    lin = Lin(2, 3)
    lin.weight.requires_grad_(False)
    new_w = ember.full((3, 2), 2.0)
    lin.load_state_dict({"weight": new_w, "bias": ember.zeros(3)}, assign=True)
    assert type(lin.weight) is nn.Parameter and not lin.weight.requires_grad
    assert lin.weight._storage_ptr() == new_w._storage_ptr()
    assert lin.bias.requires_grad
    bn = BN(2)
    rm = ember.full((2,), 5.0)
    bn.load_state_dict({"weight": ember.ones(2), "running_mean": rm, "num_batches_tracked": ember.tensor(1)},
                       assign=True)
    assert bn.running_mean is rm


def test_load_from_state_dict_override_and_extra_state():
    class Versioned(BN):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errs):
            # as BatchNorm: old checkpoints lack num_batches_tracked
            if local_metadata.get("version", 1) < 2 and prefix + "num_batches_tracked" not in state_dict:
                state_dict[prefix + "num_batches_tracked"] = ember.tensor(0)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errs)

    m = nn.Sequential(Versioned(2))
    sd = m.state_dict()
    assert sd._metadata["0"]["version"] == 2
    del sd["0.num_batches_tracked"]
    sd._metadata["0"]["version"] = 1
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"

    class Extra(nn.Module):
        def __init__(self):
            super().__init__()
            self.state = {"a": 1}

        def get_extra_state(self):
            return self.state

        def set_extra_state(self, s):
            self.state = s

    e = Extra()
    sd = e.state_dict()
    assert list(sd) == ["_extra_state"]
    e2 = Extra()
    e2.load_state_dict({"_extra_state": {"a": 5}})
    assert e2.state == {"a": 5}
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        e2.load_state_dict({})


def test_state_dict_hooks():
    calls = []
    m = _net()
    h1 = m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

    def post(mod, sd, prefix, meta):
        sd["added"] = ember.zeros(1)
    m.register_state_dict_post_hook(post)
    sd = m.state_dict()
    assert calls == [("pre", "", False)] and "added" in sd

    def legacy(mod, sd, prefix, meta):
        return OrderedDict(only=ember.ones(1))
    h2 = m._register_state_dict_hook(legacy)
    assert list(m.state_dict()) == ["only"]
    h2.remove()
    h1.remove()
    m.state_dict()
    assert len(calls) == 2  # the second state_dict() call ran the pre-hook once more

    seen = []
    lin = Lin(2, 2)

    def pre(mod, sd, prefix, meta, strict, missing, unexpected, errs):
        seen.append(("pre", mod is lin, prefix, sorted(sd)))

    def post_load(mod, keys):
        seen.append(("post", list(keys.missing_keys)))
        keys.missing_keys.clear()
    lin.register_load_state_dict_pre_hook(pre)
    lin.register_load_state_dict_post_hook(post_load)
    res = lin.load_state_dict({"weight": ember.zeros(2, 2)})  # the post hook clears "bias"
    assert repr(res) == "<All keys matched successfully>"
    assert seen == [("pre", True, "", ["weight"]), ("post", ["bias"])]


# ---- modes, conversion, grads ---------------------------------------------------------

def test_train_eval_requires_grad_zero_grad():
    net = _net()
    assert net.training and net.fc.training
    assert net.eval() is net and not net.bn.training
    net.train()
    assert net.bn.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    x = ember.randn(4, 3)
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.fc.parameters())
    net.zero_grad(set_to_none=False)
    g = net.fc.weight.grad
    assert g is not None and float(g.abs().sum()) == 0.0
    net.zero_grad()
    assert net.fc.weight.grad is None


def test_to_and_dtype_conversions_keep_parameter_identity():
    net = _net()
    w = net.fc.weight
    net(ember.randn(2, 3)).sum().backward()
    assert net.double() is net
    assert net.fc.weight is w and type(w) is nn.Parameter and w.dtype == ember.float64 and w.requires_grad
    assert w.grad.dtype == ember.float64
    assert net.bn.running_mean.dtype == ember.float64
    assert net.bn.num_batches_tracked.dtype == ember.int64  # integer buffers are not cast
    net.float()
    assert w.dtype == ember.float32
    net.to(ember.float64)
    assert w.dtype == ember.float64
    net.to("cpu", ember.float32)
    assert w.dtype == ember.float32
    net.to(device="cpu", dtype=ember.float16, non_blocking=True)
    assert w.dtype == ember.float16
    net.to(ember.zeros(1, dtype=ember.float64))
    assert w.dtype == ember.float64
    net.half()
    assert w.dtype == ember.float16
    net.bfloat16()
    assert w.dtype == ember.bfloat16
    net.cpu()
    net.type(ember.float32)
    assert w.dtype == ember.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        net.to(ember.int32)
    y = net(ember.randn(2, 3))
    assert y.dtype == ember.float32


def test_conversion_while_an_old_graph_is_alive():
    # The first graph (kept alive by `loss`) holds the leaves' AccumulateGrad nodes; after
    # .double() the next backward must still produce float64 gradients (torch's set_data
    # drops the stale accumulator).
    lin = Lin(3, 2)
    x = ember.randn(4, 3)
    loss = lin(x).sum()
    loss.backward()
    lin.zero_grad()
    lin.double()
    lin(x.double()).sum().backward()
    assert lin.weight.grad.dtype == ember.float64 and lin.bias.grad.dtype == ember.float64
    assert loss.grad_fn is not None


def test_flatten_of_already_flat_activations_keeps_gradients():
    # nn.Flatten on an (N, F) activation is flatten(1) with start == end: it must not cut
    # the graph (it returned a detached alias once).
    class Flat(nn.Module):
        def forward(self, x):
            return x.flatten(1)

    net = nn.Sequential(Lin(3, 4), Flat(), Lin(4, 2))
    net(ember.randn(5, 3)).sum().backward()
    assert net[0].weight.grad is not None and float(net[0].weight.grad.abs().sum()) > 0
    x = ember.randn(2, 3, requires_grad=True)
    assert x.flatten(1) is x and x.flatten(0, 0) is x


def test_apply_and_to_empty():
    net = _net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Lin", "BN", "Act", "Sequential"]
    net.to_empty(device="cpu")
    assert net.fc.weight.shape == (2, 3)
    w = net.fc.weight
    w.grad = ember.ones(2, 3)
    assert net.share_memory() is net
    assert net.fc.weight is w and w.is_shared() and w.grad.is_shared() and net.bn.running_mean.is_shared()


def test_deepcopy_and_pickle_module():
    net = _net()
    c = copy.deepcopy(net)
    assert c.fc.weight is not net.fc.weight and type(c.fc.weight) is nn.Parameter
    np.testing.assert_array_equal(c.fc.weight.detach().numpy(), net.fc.weight.detach().numpy())
    p = pickle.loads(pickle.dumps(net))
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in net.named_parameters()]
    x = ember.randn(2, 3)
    np.testing.assert_allclose(p(x).detach().numpy(), net(x).detach().numpy())
    state = net.__dict__.copy()
    for k in ("_forward_hooks", "_state_dict_pre_hooks"):
        del state[k]
    fresh = nn.Module.__new__(type(net))
    fresh.__setstate__(state)
    assert isinstance(fresh._forward_hooks, OrderedDict)


# ---- forward hooks -------------------------------------------------------------------

def test_forward_pre_hooks_and_hooks():
    lin = Lin(2, 2)
    log = []

    def pre(mod, args):
        log.append("pre")
        return (args[0] * 0,)

    def pre_kw(mod, args, kwargs):
        log.append(("pre_kw", kwargs))
        return args, kwargs

    def fwd(mod, args, out):
        log.append("fwd")
        return out + 1

    def fwd_kw(mod, args, kwargs, out):
        log.append("fwd_kw")

    h1 = lin.register_forward_pre_hook(pre)
    lin.register_forward_pre_hook(pre_kw, with_kwargs=True, prepend=True)
    lin.register_forward_hook(fwd)
    lin.register_forward_hook(fwd_kw, with_kwargs=True, prepend=True)
    out = lin(ember.ones(3, 2))
    assert log == [("pre_kw", {}), "pre", "fwd_kw", "fwd"]
    np.testing.assert_allclose(out.detach().numpy(), np.tile(lin.bias.detach().numpy() + 1, (3, 1)), rtol=1e-6)
    h1.remove()
    log.clear()
    lin(ember.ones(3, 2))
    assert "pre" not in log

    def bad(mod, args, kwargs):
        return 1
    lin.register_forward_pre_hook(bad, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        lin(ember.ones(1, 2))


def test_forward_hook_single_value_and_context_manager():
    a = Act()
    with a.register_forward_pre_hook(lambda m, args: args[0] + 1):
        assert a(ember.tensor([-0.5])).item() == 0.5
    assert a(ember.tensor([-0.5])).item() == 0.0


def test_always_call_forward_hook():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    seen = []
    b.register_forward_hook(lambda m, a, o: seen.append("always"), always_call=True)
    b.register_forward_hook(lambda m, a, o: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        b(ember.ones(1))
    assert seen == ["always"]


# ---- backward hooks --------------------------------------------------------------------

def test_full_backward_hook_gets_real_gradients():
    ember.manual_seed(0)
    lin = Lin(3, 2, dtype=ember.float64)
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"] = [g.clone() for g in grad_input]
        seen["go"] = [g.clone() for g in grad_output]
        seen["mod"] = mod

    def pre_hook(mod, grad_output):
        seen["pre"] = [g.clone() for g in grad_output]

    lin.register_full_backward_hook(hook)
    lin.register_full_backward_pre_hook(pre_hook)
    y = lin(x)
    up = ember.randn(4, 2, dtype=ember.float64)
    y.backward(up)
    w = lin.weight.detach().numpy()
    assert seen["mod"] is lin
    np.testing.assert_allclose(seen["go"][0].numpy(), up.numpy())
    np.testing.assert_allclose(seen["pre"][0].numpy(), up.numpy())
    np.testing.assert_allclose(seen["gi"][0].numpy(), up.numpy() @ w)
    np.testing.assert_allclose(x.grad.numpy(), up.numpy() @ w)


def test_backward_hooks_can_replace_gradients():
    lin = Lin(2, 2, dtype=ember.float64)
    x = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    lin(x).sum().backward()
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 20 * np.ones((3, 2)) @ w)
    # the pre-hook's replacement also reaches the parameters
    np.testing.assert_allclose(lin.bias.grad.numpy(), [6.0, 6.0])


def test_backward_hook_when_input_needs_no_grad_and_multiple_inputs():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2, dtype=ember.float64))

        def forward(self, a, b, scale):
            return a * self.w + b * scale, a.sum()

    m = Two()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    a = ember.randn(2, dtype=ember.float64)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    out, _ = m(a, b, 3.0)
    out.sum().backward()
    gi, go = seen[0]
    # as torch: zeros for a tensor input that needs no grad, None for a non-tensor
    assert len(gi) == 3 and gi[2] is None
    np.testing.assert_array_equal(gi[0].numpy(), [0.0, 0.0])
    np.testing.assert_allclose(gi[1].numpy(), [3.0, 3.0])
    assert len(go) == 2 and go[1] is None
    seen.clear()
    # no input requires grad: the hook still fires, with grad_input all None
    out, _ = m(a, b.detach(), 3.0)
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect to module outputs"):
        out.sum().backward()
    assert seen[0][0] == (None, None, None)
    np.testing.assert_allclose(seen[0][1][0].numpy(), [1.0, 1.0])


def test_backward_hook_errors():
    lin = Lin(2, 2, dtype=ember.float64)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    x = ember.randn(1, 2, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but expected 1"):
        lin(x).sum().backward()
    lin2 = Lin(2, 2)
    lin2.register_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin2.register_full_backward_hook(lambda m, gi, go: None)


def test_backward_hook_handle_remove():
    lin = Lin(2, 2, dtype=ember.float64)
    calls = []
    h = lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    x = ember.randn(1, 2, dtype=ember.float64, requires_grad=True)
    lin(x).sum().backward()
    h.remove()
    lin(x).sum().backward()
    assert calls == [1]


# ---- reprs ---------------------------------------------------------------------------

def test_module_repr_nested():
    net = nn.Sequential(Lin(2, 3), Act(), nn.Sequential(OrderedDict(inner=Lin(3, 1, bias=False))))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Lin(in_features=2, out_features=3, bias=True)\n"
        "  (1): Act()\n"
        "  (2): Sequential(\n"
        "    (inner): Lin(in_features=3, out_features=1, bias=False)\n"
        "  )\n"
        ")")
    assert repr(nn.Module()) == "Module()"

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = Act()

        def extra_repr(self):
            return "a=1\nb=2"
    assert repr(Multi()) == "Multi(\n  a=1\n  b=2\n  (c): Act()\n)"


def test_container_reprs():
    ml = nn.ModuleList([Act(), Act(), Lin(1, 1), Act()])
    assert repr(ml) == ("ModuleList(\n  (0-1): 2 x Act()\n"
                        "  (2): Lin(in_features=1, out_features=1, bias=True)\n  (3): Act()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.ModuleDict({"a": Act()})) == "ModuleDict(\n  (a): Act()\n)"
    pl = nn.ParameterList([nn.Parameter(ember.zeros(3, 4))])
    assert repr(pl) == "ParameterList(  (0): Parameter containing: [ember.float32 of size 3x4])"
    pl.append(ember.zeros(2, dtype=ember.float64))
    pl.append("s")
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [ember.float32 of size 3x4]\n"
                        "    (1): Parameter containing: [ember.float64 of size 2]\n"
                        "    (2): Object of type: str\n)")
    pd = nn.ParameterDict({"b": ember.zeros(2, dtype=ember.float64), "a": nn.Parameter(ember.zeros(3, 4))})
    assert repr(pd) == ("ParameterDict(\n"
                        "    (a): Parameter containing: [ember.FloatTensor of size 3x4]\n"
                        "    (b): Parameter containing: [ember.DoubleTensor of size 2]\n)")


# ---- containers ------------------------------------------------------------------------

def test_sequential():
    a, b, c = Lin(2, 2), Act(), Lin(2, 2)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and s[-3] is a
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    with pytest.raises(IndexError):
        s[-4]
    sl = s[1:]
    assert type(sl) is nn.Sequential and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
    x = ember.randn(3, 2)
    np.testing.assert_allclose(s(x).detach().numpy(), c(b(a(x))).detach().numpy())
    d = Act()
    s[1] = d
    assert s[1] is d
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is d
    s.append(a)
    assert s[2] is a
    s.insert(0, b)
    assert list(s) == [b, d, c, a]
    s.insert(-1, Act())
    assert len(s) == 5 and s[4] is a
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, Act())
    s.extend([Act()])
    assert len(s) == 6
    assert s.pop(0) is b and len(s) == 5
    del s[1:3]
    assert len(s) == 3 and list(s._modules) == ["0", "1", "2"]
    t = nn.Sequential(a) + nn.Sequential(c)
    assert list(t) == [a, c]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        t + 1
    t += nn.Sequential(b)
    assert list(t) == [a, c, b]
    assert list(nn.Sequential(a) * 2) == [a, a]
    od = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert od.first is a and list(od._modules) == ["first", "second"]
    assert od[1] is b


def test_module_list():
    a, b, c = Act(), Lin(1, 1), Act()
    ml = nn.ModuleList([a, b])
    assert len(ml) == 2 and ml[-1] is b and list(ml) == [a, b]
    ml.append(c)
    ml.extend([Act()])
    ml.insert(1, Act())
    assert len(ml) == 5 and ml[2] is b
    ml[0] = c
    assert ml[0] is c
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    assert type(ml[1:3]) is nn.ModuleList and len(ml[1:3]) == 2
    assert ml.pop(1) is b
    assert len(ml + nn.ModuleList([a])) == 4
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ml[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(3)
    with pytest.raises(NotImplementedError):
        ml(1)
    assert [n for n, _ in nn.ModuleList([b]).named_parameters()] == ["0.weight", "0.bias"]


def test_module_dict():
    a, b = Act(), Lin(1, 1)
    md = nn.ModuleDict({"a": a})
    md["b"] = b
    md.update([("c", Act())])
    assert list(md) == ["a", "b", "c"] and list(md.keys()) == ["a", "b", "c"]
    assert "b" in md and md["b"] is b and len(md) == 3
    assert [k for k, _ in md.items()] == ["a", "b", "c"]
    assert md.pop("a") is a and len(md) == 2
    del md["c"]
    assert list(md.values()) == [b]
    md.clear()
    assert len(md) == 0
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable"):
        md.update(3)
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])


def test_parameter_list_and_dict():
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(1))])
    assert all(type(p) is nn.Parameter for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl[0] = ember.ones(3)
    assert pl[0].shape == (3,) and type(pl[0]) is nn.Parameter
    pl += [ember.zeros(1)]
    assert len(pl) == 3 and len(pl[1:]) == 2 and pl[-1].shape == (1,)
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable"):
        pl.extend(ember.zeros(2))

    pd = nn.ParameterDict({"w": ember.zeros(2)})
    pd["b"] = nn.Parameter(ember.ones(1))
    assert list(pd) == ["w", "b"] and type(pd["w"]) is nn.Parameter
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert "w" in pd and pd.get("zz") is None and pd.setdefault("c", ember.zeros(1)).shape == (1,)
    k, v = pd.popitem()
    assert k == "c" and len(pd) == 2
    assert pd.pop("w").shape == (2,) and list(pd.keys()) == ["b"]
    merged = pd | nn.ParameterDict({"z": ember.zeros(1)})
    assert list(merged) == ["b", "z"]
    assert list(reversed(merged)) == ["z", "b"]
    pd.clear()
    assert len(pd) == 0
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pd[1] = ember.zeros(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called"):
        pd(1)


def test_containers_state_dict_round_trip():
    net = nn.ModuleDict({"l": nn.ModuleList([Lin(2, 2), Lin(2, 1)]),
                         "p": nn.ParameterList([ember.ones(2)])})
    assert list(net.state_dict()) == ["l.0.weight", "l.0.bias", "l.1.weight", "l.1.bias", "p.0"]
    other = nn.ModuleDict({"l": nn.ModuleList([Lin(2, 2), Lin(2, 1)]),
                           "p": nn.ParameterList([ember.zeros(2)])})
    other.load_state_dict(net.state_dict())
    np.testing.assert_array_equal(other.p[0].detach().numpy(), [1.0, 1.0])


def test_module_with_torch_subprocess_reprs_match():
    """Where PyTorch is installed, compare container reprs with it (ember.* -> torch.*)."""
    import subprocess
    if TORCH_PY is None:
        pytest.skip("PyTorch not installed")
    code = (
        "import torch, torch.nn as nn\n"
        "pl = nn.ParameterList([nn.Parameter(torch.zeros(3, 4)), torch.zeros(2, dtype=torch.float64), 's'])\n"
        "ml = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Sequential(nn.ReLU())])\n"
        "print(repr(pl)); print('---'); print(repr(ml))\n")
    try:
        out = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("PyTorch too slow to start")
    if out.returncode != 0:
        pytest.skip("PyTorch failed to run")

    class ReLU(nn.Module):
        def forward(self, x):
            return x.relu()

    pl = nn.ParameterList([nn.Parameter(ember.zeros(3, 4)), ember.zeros(2, dtype=ember.float64), "s"])
    ml = nn.ModuleList([ReLU(), ReLU(), nn.Sequential(ReLU())])
    mine = repr(pl) + "\n---\n" + repr(ml) + "\n"
    assert mine.replace("ember.", "torch.") == out.stdout


# ---- differential check against PyTorch ---------------------------------------------------

_SCENARIO = r'''
import sys
from collections import OrderedDict
if sys.argv[1] == "torch":
    import torch as T
    import torch.nn as nn
else:
    sys.path.insert(0, sys.argv[2])
    import ember as T
    import ember.nn as nn

T.manual_seed(0)

class Lin(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(T.zeros(o, i))
        self.bias = nn.Parameter(T.zeros(o))
    def forward(self, x):
        return x @ self.weight.T + self.bias

class BN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(T.ones(n))
        self.register_buffer("rm", T.zeros(n))
        self.register_buffer("tmp", T.zeros(n), persistent=False)
        self.register_buffer("none", None)
        self.register_parameter("nop", None)
    def forward(self, x):
        return x * self.weight

def show(*a):
    print(*a)

net = nn.Sequential(OrderedDict(a=Lin(2, 3), b=BN(3), c=nn.ModuleList([Lin(3, 3), BN(3)]), d=nn.ModuleDict({"x": Lin(3, 1)})))
net.c.append(net.a)
show([n for n, _ in net.named_parameters()])
show([n for n, _ in net.named_parameters(remove_duplicate=False)])
show([n for n, _ in net.named_buffers()])
show([n for n, _ in net.named_modules()])
show([n for n, _ in net.named_modules(prefix="root")])
show(list(net.state_dict().keys()))
show(sorted(net.state_dict()._metadata.items()))
show(net)
sd = net.state_dict()
sd.pop("b.rm")
sd["zzz"] = T.zeros(1)
sd["c.0.weight"] = T.zeros(5, 5)
try:
    net.load_state_dict(sd)
except RuntimeError as e:
    show(str(e))
sd["c.0.weight"] = T.zeros(3, 3)
show(net.load_state_dict(sd, strict=False))
show(net.load_state_dict(net.state_dict()))
s = net[1:]
show(type(s).__name__, list(s._modules))
del net[0]
show(list(net._modules))
ml = nn.ModuleList([BN(1), Lin(1, 1)])
ml.insert(1, BN(2))
show(ml)
del ml[::2]
show(ml)
log = []
m = Lin(2, 2)
m.register_forward_pre_hook(lambda mod, a: log.append("pre1"))
m.register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True)
m.register_forward_hook(lambda mod, a, o: log.append(("fwd", len(a))))
m.register_forward_hook(lambda mod, a, k, o: log.append(("fwdkw", sorted(k))), with_kwargs=True)
m(T.ones(1, 2))
show(log)
pl = nn.ParameterList([T.zeros(2), nn.Parameter(T.ones(3))])
show(pl, [n for n, _ in pl.named_parameters()])
pd = nn.ParameterDict({"b": T.zeros(1), "a": T.zeros(2)})
show(pd, list(pd.keys()))
for bad in (lambda: setattr(m, "weight", 1), lambda: setattr(net, "b", 2), lambda: m.register_buffer("weight", T.zeros(1)),
            lambda: m.add_module("bias", nn.Module()), lambda: m.get_submodule("q"), lambda: net.get_parameter("1.rm"),
            lambda: getattr(m, "q"), lambda: nn.Sequential()[0], lambda: nn.ModuleList()[2],
            lambda: m.register_parameter("x", T.zeros(1)), lambda: m.train(1)):
    try:
        bad()
    except Exception as e:
        show(type(e).__name__, str(e))
show([k for k in sorted(dir(m)) if not k.startswith("_") and k != "compile"][:14])
show(nn.Module().extra_repr() == "", repr(nn.Sequential()), repr(nn.ModuleDict()))
m = Lin(2, 2)
with T.no_grad():
    m.weight.copy_(T.tensor([[1.0, 2.0], [3.0, 4.0]]))
x = T.tensor([[1.0, -1.0]], requires_grad=True)
rec = []
m.register_full_backward_pre_hook(lambda mod, go: rec.append(("pre", [g.tolist() for g in go])))
m.register_full_backward_hook(lambda mod, gi, go: rec.append(("bw", [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
(m(x) * T.tensor([[1.0, 2.0]])).sum().backward()
show(rec, x.grad.tolist())
rec.clear()
m(x.detach()).sum().backward()
show(rec)

class Two(nn.Module):
    def forward(self, a, b, k):
        return a * b * k, a.detach() * 2, 3
two = Two()
rec2 = []
two.register_full_backward_hook(lambda mod, gi, go: rec2.append(([None if g is None else g.tolist() for g in gi], [None if g is None else g.tolist() for g in go])))
a = T.tensor([1.0, 2.0], requires_grad=True)
b = T.tensor([3.0, 4.0])
o1, o2, o3 = two(a, b, 2.0)
o1.sum().backward()
show(rec2, a.grad.tolist())
'''


def test_same_behaviour_as_torch(tmp_path):
    """One script of registration, iteration, state_dict, error messages, reprs and
    hooks (backward hooks included) runs under PyTorch and under ember; the outputs,
    with ember. spelled torch., must be identical."""
    import os
    import subprocess
    import sys
    if TORCH_PY is None:
        pytest.skip("PyTorch not installed")
    script = tmp_path / "scenario.py"
    script.write_text(_SCENARIO)
    try:
        ref = subprocess.run([TORCH_PY, str(script), "torch"], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("PyTorch too slow to start")
    if ref.returncode != 0 or "Traceback" in ref.stderr:
        pytest.skip("PyTorch failed to run the scenario")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    mine = subprocess.run([sys.executable, str(script), "ember", pkg], capture_output=True, text=True, timeout=300)
    assert mine.returncode == 0, mine.stderr
    assert (mine.stdout + mine.stderr).replace("ember.", "torch.") == ref.stdout + ref.stderr
