"""The graph passes (csrc/ember/jit/passes.h, Note [Graph passes]) seen from Python: CSE over
pure ops only, constant folding, no-op removal, DCE that keeps effects, freezing, and the
hook that ember.compile's fusion pass will use."""
import ember
import ember.nn as nn
from ember import _C


def _kinds(g):
    return [n.kind for n in g.nodes() if n.kind != "prim::Constant"]


def _optimized(fn, *inputs):
    g = ember.jit.trace(fn, inputs, check_trace=False).graph.copy()
    _C._jit_pass_optimize(g)
    return g


def test_cse_merges_pure_ops_but_never_random_ones():
    def f(x):
        return x.sin() * x.sin() + ember.rand(3) + ember.rand(3)
    g = _optimized(f, ember.randn(3))
    kinds = _kinds(g)
    assert kinds.count("aten::sin") == 1
    assert kinds.count("aten::rand") == 2


def test_constant_folding_and_noop_removal():
    def f(x):
        c = ember.ones(3) * 2  # no input: folded
        return x.t().t() + c
    g = _optimized(f, ember.randn(3, 3))
    kinds = _kinds(g)
    assert "aten::ones" not in kinds and "aten::mul" not in kinds
    assert "aten::t" not in kinds
    x = ember.randn(3, 3)
    assert ember.equal(_C._jit_Function("f", g)(x), f(x))


def test_dce_keeps_inplace_writes_and_drops_dead_pure_ops():
    def f(x, buf):
        x.exp()  # dead
        buf.add_(1)  # an effect on an input
        return x * 2
    g = ember.jit.trace(f, (ember.randn(2), ember.zeros(2)), check_trace=False).graph.copy()
    _C._jit_pass_dce(g)
    kinds = _kinds(g)
    assert "aten::exp" not in kinds
    assert "aten::add_" in kinds


def test_freeze_folds_parameters_into_constants():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
    frozen = ember.jit.freeze(ember.jit.trace(m, ember.randn(2, 3)))
    assert "prim::GetAttr" not in str(frozen.graph)
    x = ember.randn(5, 3)
    assert ember.allclose(frozen(x), m(x))
    assert list(frozen.parameters()) == []
    opt = ember.jit.optimize_for_inference(ember.jit.script(m))
    assert ember.allclose(opt(x), m(x))


def test_registered_pass_runs_last_in_optimize():
    seen = []

    def my_pass(g):
        seen.append([n.kind for n in g.nodes()])

    _C._jit_register_pass("test_pass", my_pass)
    try:
        _optimized(lambda x: x.sin().sin(), ember.randn(2))
    finally:
        assert _C._jit_unregister_pass("test_pass")
    assert seen and seen[-1].count("aten::sin") == 2
