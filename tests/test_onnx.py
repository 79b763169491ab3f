"""ember.onnx.export: the exported file passes onnx.checker and onnxruntime computes what
ember computes (an MLP, the tutorial CNN, resnet18, an LSTM, a transformer encoder), with
dynamic axes; an op without a mapping is an error naming it."""
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.vision.models

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run_onnx(data, inputs):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: x.numpy() for n, x in zip(names, inputs)})


def _export(model, args, **kw):
    f = io.BytesIO()
    ember.onnx.export(model, args, f, **kw)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return data


def _check(model, args, rtol=1e-4, atol=1e-5, other_inputs=(), **kw):
    model.eval()
    args = args if isinstance(args, tuple) else (args,)
    data = _export(model, args, **kw)
    for inputs in (args, *other_inputs):
        with ember.no_grad():
            want = model(*inputs)
        want = want if isinstance(want, tuple) else (want,)
        got = _run_onnx(data, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)
    return data


class TutorialCNN(nn.Module):
    """The CIFAR-10 tutorial's network (smaller input)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = ember.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def test_mlp_with_dynamic_batch():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 2))
    data = _check(m, ember.randn(3, 4), other_inputs=[(ember.randn(7, 4),)],
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    model = onnx.load_from_string(data)
    assert [i.name for i in model.graph.input] == ["x"]
    assert [o.name for o in model.graph.output] == ["y"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_tutorial_cnn():
    ember.manual_seed(0)
    _check(TutorialCNN(), ember.randn(2, 3, 32, 32))


def test_resnet18():
    ember.manual_seed(0)
    _check(ember.vision.models.resnet18(num_classes=10), ember.randn(1, 3, 64, 64),
           rtol=1e-3, atol=1e-4)


def test_lstm():
    ember.manual_seed(0)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(5, 7, num_layers=2, batch_first=True)
            self.out = nn.Linear(7, 3)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return self.out(y), h

    _check(Tagger(), ember.randn(2, 6, 5))


def test_transformer_encoder():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0,
                                       batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    _check(enc, ember.randn(2, 5, 16), rtol=1e-3, atol=1e-4)


def test_opset_version_recorded():
    m = nn.Linear(3, 2)
    model = onnx.load_from_string(_export(m, (ember.randn(1, 3),), opset_version=17))
    assert any(o.domain in ("", "ai.onnx") and o.version == 17 for o in model.opset_import)


def test_unmapped_op_named():
    class Odd(nn.Module):
        def forward(self, x):
            return ember.digamma(x)

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="aten::digamma"):
        ember.onnx.export(Odd(), (ember.randn(3),), io.BytesIO())


def test_export_to_path(tmp_path):
    m = nn.Sequential(nn.Linear(3, 2), nn.Sigmoid())
    p = tmp_path / "m.onnx"
    ember.onnx.export(m, ember.randn(4, 3), str(p))
    onnx.checker.check_model(str(p))
    x = ember.randn(4, 3)
    np.testing.assert_allclose(_run_onnx(str(p), [x])[0], m(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
