"""ember.vision.models against torchvision: the same state_dict keys and shapes, the same
initialization statistics, and, with torchvision's weights loaded by load_state_dict, the
same eval-mode output (torchvision runs in a subprocess; those tests skip without it)."""
import json
import math
import os
import subprocess
import warnings

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import nn
from ember.vision import models


def _has_torchvision():
    if TORCH_PY is None:
        return False
    r = subprocess.run([TORCH_PY, "-c", "import torchvision"], capture_output=True,
                       env=dict(os.environ, PYTHONPATH=""))
    return r.returncode == 0


needs_torchvision = pytest.mark.skipif(not _has_torchvision(),
                                       reason="torchvision not installed")

# The seven, plus the rest of their families that are cheap to check.
NAMES = ["resnet18", "resnet34", "resnet50", "vgg11", "alexnet", "mobilenet_v2",
         "squeezenet1_0"]
MORE = ["squeezenet1_1", "vgg11_bn", "resnext50_32x4d"]
# The smallest-ish input each accepts (AlexNet's 11x11 stride-4 stem needs ~63 pixels).
SIZE = {"alexnet": 64, "squeezenet1_0": 48, "squeezenet1_1": 48}


def _torch(code, timeout=600):
    r = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONPATH="", OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


_SHAPES = r"""
import json, sys, torch, torchvision
torch.manual_seed(0)
out = {}
for name in sys.argv[1:]:
    m = torchvision.models.get_model(name, weights=None)
    sd = m.state_dict()
    w = torchvision.models.get_model_weights(name)
    out[name] = dict(
        keys=list(sd), shapes=[list(v.shape) for v in sd.values()],
        dtypes=[str(v.dtype).split(".")[-1] for v in sd.values()],
        stats={k: [v.double().mean().item(), v.double().std().item()]
               for k, v in sd.items() if v.is_floating_point() and v.numel() >= 2},
        modules=[[n, type(mod).__name__] for n, mod in m.named_modules()],
        urls={e.name: e.url for e in w}, defaults=w.DEFAULT.name)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def torch_shapes():
    code = _SHAPES.replace("sys.argv[1:]", repr(NAMES + MORE))
    return json.loads(_torch(code).strip().splitlines()[-1])


@needs_torchvision
@pytest.mark.parametrize("name", NAMES + MORE)
def test_state_dict_keys_shapes_and_modules_match_torchvision(name, torch_shapes):
    ref = torch_shapes[name]
    ember.manual_seed(0)
    m = models.get_model(name, weights=None)
    sd = m.state_dict()
    assert list(sd) == ref["keys"]
    assert [list(v.shape) for v in sd.values()] == ref["shapes"]
    assert [str(v.dtype).split(".")[-1] for v in sd.values()] == ref["dtypes"]
    # The module tree: names and class names, in registration order.
    assert [[n, type(mod).__name__] for n, mod in m.named_modules()] == ref["modules"]
    # The weights enum names what torchvision publishes.
    w = models.get_model_weights(name)
    assert {e.name: e.url for e in w} == ref["urls"]
    assert w.DEFAULT.name == ref["defaults"]


def _close_stat(got, want, numel):
    # The sample mean/std of n draws moves by about std/sqrt(n): allow six of those.
    return abs(got - want) <= 6.0 * max(abs(want), 1e-3) / math.sqrt(numel) + 1e-6


@needs_torchvision
@pytest.mark.parametrize("name", NAMES + MORE)
def test_initialization_statistics_match_torchvision(name, torch_shapes):
    """torchvision's init schemes: kaiming_normal(fan_out) convolutions, N(0, 0.01) linears,
    BatchNorm weight 1 / bias 0, SqueezeNet's kaiming_uniform, AlexNet's layer defaults."""
    ref = torch_shapes[name]
    ember.manual_seed(0)
    sd = models.get_model(name).state_dict()
    for key, (mean, std) in ref["stats"].items():
        v = sd[key].to(ember.float64)
        n = v.numel()
        got_mean, got_std = v.mean().item(), v.std().item()
        if std == 0.0:
            assert got_std == 0.0 and got_mean == mean, key
            continue
        assert abs(got_mean - mean) <= 6.0 * std / math.sqrt(n) + 1e-7, (key, got_mean, mean)
        assert abs(got_std - std) <= 6.0 * std / math.sqrt(n) + 0.02 * std, (key, got_std, std)


_EXPORT = r"""
import os, sys, numpy as np, torch, torchvision
folder, jobs = sys.argv[1], sys.argv[2]
for name, size in jobs:
    torch.manual_seed(1)
    m = torchvision.models.get_model(name, weights=None, num_classes=10)
    with torch.no_grad():
        for mod in m.modules():  # give eval-mode BatchNorm statistics that matter
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 2.0)
                mod.weight.uniform_(0.5, 1.5); mod.bias.uniform_(-0.2, 0.2)
    m.eval()
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        y = m(x)
    arrays = {"sd/" + k: v.numpy() for k, v in m.state_dict().items()}
    np.savez(os.path.join(folder, name + ".npz"), x=x.numpy(), y=y.numpy(), **arrays)
"""


@pytest.fixture(scope="module")
def torch_exports(tmp_path_factory):
    """One torchvision process exports every model's weights, input and eval output."""
    folder = str(tmp_path_factory.mktemp("torchvision"))
    jobs = [(name, SIZE.get(name, 40)) for name in NAMES + MORE]
    _torch(_EXPORT.replace("sys.argv[1], sys.argv[2]", f"{folder!r}, {jobs!r}"))
    return folder


@needs_torchvision
@pytest.mark.parametrize("name", NAMES + MORE)
def test_torchvision_weights_load_and_give_torchvisions_output(name, torch_exports, device):
    data = np.load(os.path.join(torch_exports, name + ".npz"))
    sd = {k[3:]: ember.from_numpy(data[k].copy()) for k in data.files if k.startswith("sd/")}
    m = models.get_model(name, num_classes=10).to(device)
    result = m.load_state_dict(sd)  # CPU tensors into a model on `device`
    assert not result.missing_keys and not result.unexpected_keys
    m.eval()
    with ember.no_grad():
        y = m(ember.from_numpy(data["x"]).to(device)).cpu().numpy()
    want = data["y"]
    assert y.shape == want.shape == (2, 10)
    scale = float(np.abs(want).max())
    # CUDA sums in other orders (cuDNN's algorithms): a looser float32 tolerance there.
    rtol = 1e-4 if device == "cpu" else 2e-3
    np.testing.assert_allclose(y, want, rtol=rtol, atol=rtol * 0.1 * scale)


@pytest.mark.parametrize("name", NAMES + MORE)
def test_forward_backward_small_input(name, device):
    ember.manual_seed(0)
    m = models.get_model(name, num_classes=7).to(device)
    size = SIZE.get(name, 32)
    x = ember.randn(2, 3, size, size, device=device, requires_grad=True)
    y = m(x)
    assert y.shape == (2, 7) and y.device.type == device
    loss = nn.functional.cross_entropy(y, ember.tensor([1, 5], device=device))
    loss.backward()
    assert x.grad is not None and x.grad.shape == x.shape
    assert bool(ember.isfinite(x.grad).all())
    for n, p in m.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, n
    # Eval mode runs too and is deterministic (dropout off, running statistics).
    m.eval()
    with ember.no_grad():
        a, b = m(x), m(x)
    assert ember.equal(a, b)


def test_builders_and_classes_by_torchvision_names():
    assert isinstance(models.resnet18(), models.ResNet)
    assert isinstance(models.resnet50(), models.resnet.ResNet)
    assert models.resnet18().layer1[0].__class__ is models.resnet.BasicBlock
    assert models.resnet50().layer1[0].__class__ is models.resnet.Bottleneck
    assert isinstance(models.vgg11(), models.VGG)
    assert isinstance(models.alexnet(), models.AlexNet)
    assert isinstance(models.mobilenet_v2(), models.MobileNetV2)
    assert isinstance(models.mobilenet_v2().features[1], models.mobilenetv2.InvertedResidual)
    assert isinstance(models.squeezenet1_0(), models.SqueezeNet)
    assert isinstance(models.squeezenet1_0().features[3], models.squeezenet.Fire)
    from ember.vision.ops import Conv2dNormActivation
    assert isinstance(models.mobilenet_v2().features[0], Conv2dNormActivation)
    assert models.resnet18(num_classes=10).fc.out_features == 10
    assert models.resnet18(num_classes=10).fc.in_features == 512
    assert models.resnet50(num_classes=3).fc.in_features == 2048
    for name in NAMES:
        assert name in models.list_models()
    assert models.list_models(include="resnet*")[:2] == ["resnet101", "resnet152"]
    assert "vgg11" not in models.list_models(exclude="vgg*")
    assert isinstance(models.get_model("ResNet18"), models.ResNet)
    assert models.get_model_weights("resnet18") is models.ResNet18_Weights
    assert models.get_model_weights(models.resnet18) is models.ResNet18_Weights
    assert models.get_weight("ResNet50_Weights.IMAGENET1K_V2") is models.ResNet50_Weights.DEFAULT
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet9000")


def test_zero_init_residual_and_block_errors():
    m = models.resnet18(zero_init_residual=True)
    assert all(float(b.bn2.weight.abs().sum()) == 0 for b in m.modules()
               if isinstance(b, models.resnet.BasicBlock))
    m = models.resnet50(zero_init_residual=True)
    assert all(float(b.bn3.weight.abs().sum()) == 0 for b in m.modules()
               if isinstance(b, models.resnet.Bottleneck))
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet.BasicBlock(64, 64, groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1"):
        models.resnet.BasicBlock(64, 64, dilation=2)
    with pytest.raises(ValueError, match="replace_stride_with_dilation"):
        models.resnet50(replace_stride_with_dilation=[False])
    with pytest.raises(ValueError, match="expected value 32 but got 8"):
        models.resnext50_32x4d(groups=8)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version"):
        models.SqueezeNet("2_0")
    with pytest.raises(ValueError, match="stride should be 1 or 2"):
        models.mobilenetv2.InvertedResidual(8, 8, 3, 6)
    # Dilation in place of stride keeps layer4 at 1/16 of the input.
    m = models.resnet50(replace_stride_with_dilation=[False, False, True], num_classes=4)
    assert m.layer4[1].conv2.dilation == (2, 2)
    assert m(ember.randn(1, 3, 32, 32)).shape == (1, 4)


@pytest.mark.parametrize("weights", ["IMAGENET1K_V1", "DEFAULT", "ResNet18_Weights.DEFAULT"])
def test_pretrained_weights_raise_a_clear_error(weights):
    with pytest.raises(RuntimeError, match=r"downloads nothing.*weights=None.*load_state_dict"):
        models.resnet18(weights=weights)


def test_weights_enums_and_legacy_pretrained():
    with pytest.raises(RuntimeError, match="ResNet18_Weights.IMAGENET1K_V1"):
        models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1)
    with pytest.raises(RuntimeError, match="MobileNet_V2_Weights.IMAGENET1K_V2"):
        models.mobilenet_v2(weights=models.MobileNet_V2_Weights.DEFAULT)
    with pytest.raises(RuntimeError, match="not available"):
        models.ResNet18_Weights.DEFAULT.get_state_dict(progress=True)
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received VGG11_Weights"):
        models.resnet18(weights=models.VGG11_Weights.DEFAULT)
    with pytest.raises(ValueError, match="Failed to find Weights IMAGENET9K"):
        models.resnet18(weights="IMAGENET9K")
    with pytest.raises(TypeError, match="positional"):
        models.resnet18(None)
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"):
        assert isinstance(models.alexnet(pretrained=False), models.AlexNet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="AlexNet_Weights.IMAGENET1K_V1"):
            models.alexnet(pretrained=True)
    assert models.ResNet18_Weights.DEFAULT is models.ResNet18_Weights.IMAGENET1K_V1
    assert repr(models.VGG11_Weights.DEFAULT) == "VGG11_Weights.IMAGENET1K_V1"
    assert models.ResNet50_Weights.DEFAULT.meta["num_params"] == sum(
        p.numel() for p in models.resnet50().parameters())


def test_state_dict_round_trip_through_save_and_load(tmp_path):
    ember.manual_seed(3)
    a = models.squeezenet1_1(num_classes=5).eval()
    ember.save(a.state_dict(), tmp_path / "sq.pt")
    b = models.squeezenet1_1(num_classes=5).eval()
    b.load_state_dict(ember.load(tmp_path / "sq.pt"))
    x = ember.randn(1, 3, 48, 48)
    with ember.no_grad():
        assert ember.equal(a(x), b(x))
