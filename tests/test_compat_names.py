"""The names PyTorch programs touch even on a CPU: ember.accelerator, the Tensor.is_<backend>
queries, the legacy typed constructors (ember.FloatTensor(...), isinstance, .type()) and the
torch.nn.modules.<family> import paths."""
import importlib
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import nn

HAS_CUDA_BUILD = ember.cuda._lazy() is not None


# ---- ember.accelerator ----------------------------------------------------------------------

def test_accelerator_queries_match_the_build_and_the_machine():
    A = ember.accelerator
    assert A.is_available() == ember.cuda.is_available()
    assert A.device_count() == ember.cuda.device_count()
    acc = A.current_accelerator()
    if HAS_CUDA_BUILD:
        assert acc == ember.device("cuda") and acc.index is None
    else:
        assert acc is None
    checked = A.current_accelerator(check_available=True)
    assert checked == (ember.device("cuda") if ember.cuda.is_available() else None)
    assert A.get_device_module() is (ember.cuda if HAS_CUDA_BUILD else ember.cpu)
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda")) is ember.cuda
    with pytest.raises(RuntimeError, match="Invalid value of device '3'"):
        ember.get_device_module(3)


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-accelerator behaviour")
def test_accelerator_without_a_device():
    A = ember.accelerator
    for call in (A.current_device_index, A.synchronize, A.current_stream,
                 lambda: A.set_device_index(0), lambda: A.get_device_capability()):
        with pytest.raises(RuntimeError) as e:
            call()
        msg = str(e.value)
        if not HAS_CUDA_BUILD:
            assert msg == "Cannot access accelerator device when none is available."
        else:  # a CUDA build on a machine without a GPU: ember.cuda's reason
            assert "no CUDA device" in msg or "NVIDIA driver" in msg
    # The memory queries answer as for an allocator that never allocated, as PyTorch's.
    assert A.memory_allocated() == 0 and A.max_memory_allocated() == 0
    assert A.memory_reserved() == 0 and A.max_memory_reserved() == 0
    assert A.memory_stats() == {}
    assert A.empty_cache() is None and A.empty_host_cache() is None
    assert A.reset_peak_memory_stats() is None
    # No-op device_index(None); deprecated aliases warn.
    with A.device_index(None):
        pass
    with pytest.warns(FutureWarning, match="current_device_index"):
        with pytest.raises(RuntimeError):
            A.current_device_idx()


def test_accelerator_device_arguments(device):
    A = ember.accelerator
    if device != "cuda":
        pytest.skip("needs an accelerator device")
    assert A.current_device_index() == ember.cuda.current_device()
    A.set_device_index("cuda:0")
    A.set_device_index(ember.device("cuda", 0))
    A.synchronize()
    A.synchronize(0)
    with A.device_index(0):
        assert A.current_device_index() == 0
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda"):
        A.synchronize("cpu")
    with pytest.raises(ValueError, match="Expected a ember.device with a specified index"):
        A.set_device_index("cuda")
    x = ember.ones(1000, device="cuda")
    assert A.memory_allocated() >= 4000
    assert A.get_device_capability()["supported_dtypes"] >= {ember.float32, ember.int64}
    stream = A.current_stream()
    A.set_stream(stream)
    del x


# ---- Tensor.is_<backend> ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["is_xpu", "is_ipu", "is_mps", "is_mtia", "is_maia",
                                  "is_vulkan", "is_xla", "is_meta", "is_mkldnn", "is_quantized",
                                  "is_nested", "is_sparse_csr"])
def test_backend_queries_are_false(name, device):
    x = ember.zeros(2, device=device)
    assert getattr(x, name) is False
    assert getattr(x[0], name) is False
    assert x.is_cuda == (device == "cuda") and x.is_cpu == (device == "cpu")


# ---- legacy typed constructors --------------------------------------------------------------

TYPES = {"FloatTensor": ember.float32, "DoubleTensor": ember.float64,
         "HalfTensor": ember.float16, "BFloat16Tensor": ember.bfloat16,
         "ByteTensor": ember.uint8, "CharTensor": ember.int8, "ShortTensor": ember.int16,
         "IntTensor": ember.int32, "LongTensor": ember.int64, "BoolTensor": ember.bool}


@pytest.mark.parametrize("name", list(TYPES))
def test_typed_constructor_forms(name):
    T, dt = getattr(ember, name), TYPES[name]
    assert T.dtype == dt and T.is_cuda is False and T.is_sparse is False
    assert T.layout is ember.strided
    assert repr(T) == f"<class 'ember.{name}'>"
    assert not issubclass(T, ember.Tensor)
    e = T()
    assert e.dtype == dt and tuple(e.shape) == (0,)
    assert tuple(T(3).shape) == (3,) and tuple(T(2, 3).shape) == (2, 3)
    assert tuple(T(ember.Size([2, 3])).shape) == (2, 3)
    d = T([1, 0, 1])  # a list is data, even of ints
    assert d.dtype == dt and d.tolist() == [True, False, True] if dt == ember.bool else \
        d.tolist() == [1, 0, 1]
    assert T((1, 1)).tolist() == ([True, True] if dt == ember.bool else [1, 1])
    x = T(np.array([1, 0, 1], dtype=np.float64))
    assert x.dtype == dt and x.shape == (3,)
    assert isinstance(x, T) and isinstance(x, ember.Tensor)
    assert x.type() == f"ember.{name}"
    others = [getattr(ember, n) for n in TYPES if n != name]
    assert not any(isinstance(x, o) for o in others)
    assert not isinstance(x, getattr(ember.cuda, name))
    assert not isinstance(3, T) and not isinstance(np.zeros(2), T)
    assert pickle.loads(pickle.dumps(T)) is T
    assert T(2, 3, device="cpu").shape == (2, 3)


def test_typed_constructor_semantics_match_pytorch():
    # An ndarray of the class's dtype is shared, as PyTorch's legacy constructor shares it.
    a = np.zeros(3, dtype=np.float32)
    t = ember.FloatTensor(a)
    t[0] = 5
    assert a[0] == 5
    # Another dtype is converted (a copy).
    b = np.arange(3.0)
    t = ember.FloatTensor(b)
    t[0] = 7
    assert t.dtype == ember.float32 and b[0] == 0
    assert ember.LongTensor([1.7, 2]).tolist() == [1, 2]
    assert ember.IntTensor(np.array([1, 2])).dtype == ember.int32
    assert ember.FloatTensor(range(3)).tolist() == [0.0, 1.0, 2.0]
    assert ember.FloatTensor(ember.tensor(3.0)).dim() == 0
    # A tensor of the same type: an alias that autograd sees (AliasBackward0).
    x = ember.zeros(2, requires_grad=True)
    y = ember.FloatTensor(x)
    assert y is not x and y.requires_grad and type(y.grad_fn).__name__ == "AliasBackward0"
    assert y.data_ptr() == x.data_ptr()
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    # Uninitialized sizes of a Parameter / a subclass still pass isinstance.
    assert isinstance(nn.Parameter(ember.zeros(2)), ember.FloatTensor)
    assert isinstance(ember.zeros(2, dtype=ember.int64), ember.LongTensor)


def test_base_tensor_constructor_aliases_with_autograd():
    """ember.Tensor(t), as torch.Tensor(t): an alias of any dtype that autograd records."""
    x = ember.zeros(2, requires_grad=True)
    y = ember.Tensor(x)
    assert y is not x and y.data_ptr() == x.data_ptr()
    assert type(y.grad_fn).__name__ == "AliasBackward0"
    (y * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    z = ember.Tensor(ember.arange(3))
    assert z.dtype == ember.int64 and not z.requires_grad


def test_typed_constructor_errors():
    with pytest.raises(TypeError, match=r"expected ember.FloatTensor \(got ember.DoubleTensor\)"):
        ember.FloatTensor(ember.zeros(2, dtype=ember.float64))
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        ember.FloatTensor(3.5)
    with pytest.raises(TypeError, match=r"data must be a sequence \(got bool\)"):
        ember.FloatTensor(True)
    with pytest.raises(TypeError, match=r"data must be a sequence \(got numpy.float64\)"):
        ember.FloatTensor(np.float64(2))
    with pytest.raises(TypeError, match=r"new\(\): invalid data type 'str'"):
        ember.FloatTensor("ab")
    with pytest.raises(TypeError):
        ember.FloatTensor(2, [3])
    with pytest.raises(TypeError):
        ember.FloatTensor(ember.Size([2]), 3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.FloatTensor(-1)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: cuda was passed"):
        ember.FloatTensor(2, 3, device="cuda")
    with pytest.raises(RuntimeError, match="overflow|out of range"):
        ember.ByteTensor([1, 300])
    with pytest.raises(ValueError):
        ember.FloatTensor([[1, 2], [3]])


def test_cuda_typed_constructors(device):
    T = ember.cuda.FloatTensor
    assert repr(T) == "<class 'ember.cuda.FloatTensor'>" and T.is_cuda and T.dtype == ember.float32
    assert isinstance(ember.zeros(2, device=device), T) == (device == "cuda")
    with pytest.warns(UserWarning, match="DtypeTensor constructors are no longer recommended"):
        if ember.cuda.is_available():
            x = ember.cuda.LongTensor([1, 2])
            assert x.is_cuda and x.dtype == ember.int64 and x.type() == "ember.cuda.LongTensor"
            assert isinstance(x, ember.cuda.LongTensor) and not isinstance(x, ember.LongTensor)
            assert tuple(ember.cuda.HalfTensor(2, 3).shape) == (2, 3)
        else:
            with pytest.raises(RuntimeError):
                ember.cuda.FloatTensor(2)


def test_tensor_type_accepts_the_legacy_types():
    x = ember.zeros(2)
    assert x.type(ember.DoubleTensor).dtype == ember.float64
    assert x.type("ember.IntTensor").dtype == ember.int32
    assert x.type("torch.LongTensor").dtype == ember.int64
    assert x.type(ember.float16).dtype == ember.float16
    assert x.type() == "ember.FloatTensor"
    with pytest.raises(ValueError, match="invalid type"):
        x.type("ember.NoSuchTensor")


def test_set_default_tensor_type():
    old = ember.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() == ember.float64
        assert ember.tensor([1.0]).dtype == ember.float64
        with pytest.warns(UserWarning):
            ember.set_default_tensor_type("torch.FloatTensor")
        assert ember.get_default_dtype() == ember.float32
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="only floating-point types"):
                ember.set_default_tensor_type(ember.LongTensor)
            with pytest.raises(TypeError, match="invalid type"):
                ember.set_default_tensor_type("ember.NoTensor")
    finally:
        ember.set_default_dtype(old)


# ---- torch.nn.modules.<family> paths -----------------------------------------------------------

# torch.nn.modules' families and their classes (PyTorch 2.15); every class ember.nn has must be
# reachable at the same path.
TORCH_NN_MODULES = {
    "activation": ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish",
                   "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish",
                   "MultiheadAttention", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU", "SiLU",
                   "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink",
                   "Softsign", "Tanh", "Tanhshrink", "Threshold"],
    "adaptive": ["AdaptiveLogSoftmaxWithLoss"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d",
                  "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"],
    "channelshuffle": ["ChannelShuffle"],
    "container": ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList",
                  "Sequential"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"],
    "distance": ["CosineSimilarity", "PairwiseDistance"],
    "dropout": ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                "FeatureAlphaDropout"],
    "flatten": ["Flatten", "Unflatten"],
    "fold": ["Fold", "Unfold"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"],
    "linear": ["Bilinear", "Identity", "LazyLinear", "Linear"],
    "loss": ["BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss",
             "CrossEntropyLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss",
             "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss", "MultiLabelMarginLoss",
             "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss",
             "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
             "TripletMarginWithDistanceLoss"],
    "module": ["Module"],
    "normalization": ["CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"],
    "padding": ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
                "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
                "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
                "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "pooling": ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
                "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d",
                "AvgPool2d", "AvgPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
                "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
                "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"],
    "rnn": ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "transformer": ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
                    "TransformerEncoder", "TransformerEncoderLayer"],
    "upsampling": ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"],
}


def test_every_nn_class_is_at_its_torch_path():
    missing = []
    checked = 0
    for family, names in TORCH_NN_MODULES.items():
        for name in names:
            cls = getattr(nn, name, None)
            if cls is None:
                continue  # a layer ember does not have
            try:
                mod = importlib.import_module(f"ember.nn.modules.{family}")
            except ImportError:
                missing.append(f"ember.nn.modules.{family} (for {name})")
                continue
            if getattr(mod, name, None) is not cls:
                missing.append(f"ember.nn.modules.{family}.{name}")
            checked += 1
    assert not missing, missing
    assert checked > 100


def test_special_nn_module_paths():
    from ember.nn.modules.activation import MultiheadAttention, NonDynamicallyQuantizableLinear
    from ember.nn.modules.batchnorm import _BatchNorm, _NormBase
    from ember.nn.modules.conv import _ConvNd
    from ember.nn.modules.instancenorm import _InstanceNorm
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear as NDQL
    from ember.nn.modules.pixelshuffle import PixelShuffle
    from ember.nn.modules.utils import _pair, _quadruple, _single, _triple

    assert MultiheadAttention is nn.MultiheadAttention and PixelShuffle is nn.PixelShuffle
    assert NonDynamicallyQuantizableLinear is NDQL and issubclass(NDQL, nn.Linear)
    assert type(nn.MultiheadAttention(4, 2).out_proj) is NDQL
    assert isinstance(nn.BatchNorm2d(3), _BatchNorm) and isinstance(nn.BatchNorm1d(3), _NormBase)
    assert isinstance(nn.InstanceNorm2d(3), _InstanceNorm) and isinstance(nn.Conv2d(1, 1, 1),
                                                                          _ConvNd)
    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple([1, 2, 3]) == (1, 2, 3)
    assert _quadruple(0) == (0, 0, 0, 0)
    with pytest.raises(AttributeError):
        importlib.import_module("ember.nn.modules.activation").NoSuchLayer  # noqa: B018


def test_consume_prefix_in_state_dict_if_present():
    from collections import OrderedDict

    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present

    sd = OrderedDict([("module.a.weight", 1), ("module.b", 2), ("c", 3)])
    sd._metadata = OrderedDict([("", {}), ("module", {}), ("module.a", {"version": 1})])
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["c", "a.weight", "b"]
    assert set(sd._metadata) == {"", "a"}


def test_nn_namespace_is_not_shadowed_by_family_modules():
    """ember.nn exports the layer classes; the family modules (one of them named utils) must
    not replace ember.nn.utils, ember.nn.init or ember.nn.functional."""
    import ember.nn.utils as nn_utils

    assert nn.utils is nn_utils and nn.utils.clip_grad_norm_ is not None
    assert nn.utils.rnn.pack_padded_sequence is not None
    assert nn.init.kaiming_normal_ is not None and nn.functional.relu is not None
    import ember.nn.modules.utils as modules_utils

    assert modules_utils is not nn.utils and nn.utils is nn_utils
    assert nn.modules.batchnorm._BatchNorm is nn.modules.normalization._BatchNorm
    assert not hasattr(nn, "batchnorm") and not hasattr(nn, "pixelshuffle")
