"""SummaryWriter: event files read back with TensorBoard's own reader."""
import glob
import io
import os
import struct

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.compat.proto.event_pb2 import Event  # noqa: E402
from tensorboard.plugins.custom_scalar import layout_pb2  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_pb2  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from ember.utils.tensorboard._record_writer import masked_crc32c  # noqa: E402


def load(logdir, **size):
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.TENSORS: 0, ea.IMAGES: 0, ea.SCALARS: 0,
                                                          ea.HISTOGRAMS: 0, **size})
    acc.Reload()
    return acc


def records(path):
    """Every record of an event file, checking both CRCs (pure-Python CRC-32C reference)."""
    def crc32c_py(data):
        c = 0xFFFFFFFF
        for b in data:
            c ^= b
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        c ^= 0xFFFFFFFF
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    out = []
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        header = buf[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        data = buf[pos + 12:pos + 12 + n]
        (dcrc,) = struct.unpack("<I", buf[pos + 12 + n:pos + 16 + n])
        assert hcrc == crc32c_py(header) and dcrc == crc32c_py(data)
        out.append(Event.FromString(data))
        pos += 16 + n
    return out


def test_crc32c_known_values():
    # CRC-32C check value of "123456789" is 0xE3069283; TFRecord masks it.
    c = ember._C._crc32c(b"123456789")
    assert c == 0xE3069283
    assert masked_crc32c(b"123456789") == ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)
    long = bytes(range(256)) * 37
    assert ember._C._crc32c(long) == ember._C._crc32c(long[:100] + long[100:])


def test_scalars_file_framing_and_context_manager(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".x") as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("t", ember.tensor(2.5), 7)
        w.add_scalar("d", 0.1, 1, new_style=True, double_precision=True)
    files = glob.glob(str(tmp_path / "events.out.tfevents.*.x"))
    assert len(files) == 1
    evs = records(files[0])
    assert evs[0].file_version == "brain.Event:2"
    acc = load(tmp_path)
    loss = acc.Scalars("loss")
    assert [s.step for s in loss] == list(range(5))
    np.testing.assert_allclose([s.value for s in loss], [1 / (i + 1) for i in range(5)], rtol=1e-6)
    assert acc.Scalars("t")[0].value == 2.5 and acc.Scalars("t")[0].step == 7
    assert acc.Tensors("d")[0].tensor_proto.double_val == [0.1]


def test_default_logdir_and_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    w.close()
    (d,) = os.listdir(tmp_path / "runs")
    assert d.endswith("_exp") and glob.glob(str(tmp_path / "runs" / d / "events.out.tfevents.*"))


def test_background_flush(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=1, max_queue=2)
    for i in range(20):
        w.add_scalar("x", i, i)
    w.flush()
    assert [s.value for s in load(tmp_path).Scalars("x")] == list(range(20))
    events = w.file_writer._writer
    w.close()
    assert not events._thread.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        events.add_event(Event())


def test_add_scalars_runs(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalars("run", {"a": i, "b": 2 * i}, i)
    a = load(tmp_path / "run_a").Scalars("run")
    b = load(tmp_path / "run_b").Scalars("run")
    assert [s.value for s in a] == [0, 1, 2] and [s.value for s in b] == [0, 2, 4]


def test_histogram(tmp_path):
    vals = np.random.default_rng(0).normal(size=1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", ember.from_numpy(vals), 3)
        w.add_histogram("u", vals, 4, bins=10)
    acc = load(tmp_path)
    h = acc.Histograms("h")[0]
    assert h.step == 3
    hv = h.histogram_value
    assert hv.num == 1000 and np.isclose(hv.sum, vals.sum()) and np.isclose(hv.sum_squares, vals @ vals)
    assert hv.min == vals.min() and hv.max == vals.max() and sum(hv.bucket) == 1000
    u = acc.Histograms("u")[0].histogram_value
    counts, _ = np.histogram(vals, bins=10)
    assert list(u.bucket)[1:] == counts.tolist()[:len(u.bucket) - 1] or sum(u.bucket) == 1000


def test_images(tmp_path):
    from PIL import Image
    chw = np.random.default_rng(1).random((3, 8, 10)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", ember.from_numpy(chw), 0)
        w.add_image("hwc", chw.transpose(1, 2, 0), 0, dataformats="HWC")
        w.add_image("hw", (chw[0] * 255).astype(np.uint8), 0, dataformats="HW")
        w.add_images("batch", ember.from_numpy(np.stack([chw] * 10)), 0)
        with pytest.raises(ValueError, match="1, 3 or 4 channels, got 10"):
            w.add_image("bad", chw, 0, dataformats="HWC")
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("bad", chw, 0, dataformats="HW")
    acc = load(tmp_path)
    ref = np.clip(chw.transpose(1, 2, 0) * 255 + 0.5, 0, 255).astype(np.uint8)
    for tag in ("chw", "hwc"):
        im = acc.Images(tag)[0]
        assert (im.height, im.width) == (8, 10)
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(im.encoded_image_string))), ref)
    hw = acc.Images("hw")[0]
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(hw.encoded_image_string))),
                                  (chw[0] * 255).astype(np.uint8))
    b = acc.Images("batch")[0]
    assert (b.height, b.width) == (16, 80)  # 8 per row, no padding


def test_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 2)
    im = load(tmp_path).Images("fig")[0]
    assert (im.width, im.height) == (100, 50) and im.step == 2


def test_text_pr_curve_custom_scalars(tmp_path):
    labels = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    preds = np.array([0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.6, 0.4])
    with SummaryWriter(tmp_path) as w:
        w.add_text("note", "hello **world**", 1)
        w.add_pr_curve("pr", ember.from_numpy(labels), ember.from_numpy(preds), 0, num_thresholds=11)
        w.add_custom_scalars({"Training": {"loss": ["Multiline", ["loss/train", "loss/val"]],
                                           "acc": ["Margin", ["acc", "acc_lo", "acc_hi"]]}})
    acc = load(tmp_path)
    t = acc.Tensors("note/text_summary")[0].tensor_proto
    assert t.string_val == [b"hello **world**"]
    pr = ember.tensor(0)  # keep ember imported for the reader's numpy conversion
    del pr
    from tensorboard.util import tensor_util
    data = tensor_util.make_ndarray(acc.Tensors("pr")[0].tensor_proto)
    assert data.shape == (6, 11)
    tp, fp, tn, fn, precision, recall = data
    for k in range(11):
        th = k / 10
        pos = preds >= th - 1e-9
        assert tp[k] == np.sum(pos & (labels == 1)) and fp[k] == np.sum(pos & (labels == 0))
    assert tn[0] == 0 and fn[0] == 0 and recall[0] == 1
    assert acc.summary_metadata["pr"].plugin_data.plugin_name == "pr_curves"
    lay = layout_pb2.Layout.FromString(acc.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    assert lay.category[0].title == "Training"
    assert list(lay.category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]
    assert lay.category[0].chart[1].margin.series[0].upper == "acc_hi"


def test_hparams(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "nesterov": True}, {"hparam/acc": 0.9},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="r1")
    acc = load(tmp_path / "r1")
    meta = acc.summary_metadata
    exp = hparams_pb2.HParamsPluginData.FromString(meta["_hparams_/experiment"].plugin_data.content).experiment
    assert sorted(h.name for h in exp.hparam_infos) == ["bs", "lr", "nesterov", "opt"]
    opt = [h for h in exp.hparam_infos if h.name == "opt"][0]
    assert [v.string_value for v in opt.domain_discrete.values] == ["sgd", "adam"]
    start = hparams_pb2.HParamsPluginData.FromString(meta["_hparams_/session_start_info"].plugin_data.content)
    assert start.session_start_info.hparams["lr"].number_value == 0.1
    assert start.session_start_info.hparams["opt"].string_value == "sgd"
    assert acc.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    with pytest.raises(ValueError, match="should be bool"):
        SummaryWriter(tmp_path / "x").add_hparams({"bad": [1]}, {})


def test_embedding(tmp_path):
    from google.protobuf import text_format
    from tensorboard.plugins.projector import projector_config_pb2
    mat = np.random.default_rng(2).random((5, 3)).astype(np.float32)
    imgs = np.random.default_rng(3).random((5, 1, 4, 4)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(ember.from_numpy(mat), metadata=list("abcde"), label_img=ember.from_numpy(imgs), global_step=3)
        w.add_embedding(mat, metadata=[("a", 1)] * 5, metadata_header=["ch", "n"], global_step=4, tag="two")
    cfg = projector_config_pb2.ProjectorConfig()
    text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(), cfg)
    assert [e.tensor_name for e in cfg.embeddings] == ["default:00003", "two:00004"]
    e = cfg.embeddings[0]
    got = np.loadtxt(tmp_path / e.tensor_path, delimiter="\t")
    np.testing.assert_allclose(got, mat, rtol=1e-6)
    assert (tmp_path / e.metadata_path).read_text().split() == list("abcde")
    from PIL import Image
    sprite = Image.open(tmp_path / e.sprite.image_path)
    assert sprite.size == (12, 12) and list(e.sprite.single_image_dim) == [4, 4]
    lines = (tmp_path / cfg.embeddings[1].metadata_path).read_text().splitlines()
    assert lines[0] == "ch\tn" and lines[1] == "a\t1"


def test_purge_step(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(10):
            w.add_scalar("x", i, i)
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for i in range(5, 8):
            w.add_scalar("x", 100 + i, i)
    vals = {s.step: s.value for s in load(tmp_path).Scalars("x")}
    assert vals == {**{i: i for i in range(5)}, 5: 105, 6: 106, 7: 107}


class _Mod:
    """A minimal module with forward hooks, for when ember.nn has no Module yet."""

    def __init__(self, **children):
        self._children = children
        self._pre, self._post = [], []

    def children(self):
        return iter(self._children.values())

    def named_modules(self, prefix=""):
        yield prefix, self
        for n, c in self._children.items():
            yield from c.named_modules(f"{prefix}.{n}" if prefix else n)

    def register_forward_pre_hook(self, h):
        self._pre.append(h)
        return _Handle(self._pre, h)

    def register_forward_hook(self, h):
        self._post.append(h)
        return _Handle(self._post, h)

    def __call__(self, *args):
        for h in self._pre:
            h(self, args)
        out = self.forward(*args)
        for h in self._post:
            h(self, args, out)
        return out


class _Handle:
    def __init__(self, lst, h):
        self.lst, self.h = lst, h

    def remove(self):
        self.lst.remove(self.h)


class Linear(_Mod):
    def __init__(self, i, o):
        super().__init__()
        self.w = ember.randn(i, o, requires_grad=True)

    def forward(self, x):
        return x @ self.w


class Net(_Mod):
    def __init__(self):
        super().__init__(fc1=Linear(4, 8), fc2=Linear(8, 2))

    def forward(self, x):
        return self._children["fc2"](self._children["fc1"](x).relu())


def test_add_graph(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(Net(), ember.randn(3, 4))
    g = load(tmp_path).Graph()
    nodes = {n.name: n for n in g.node}
    assert "input/input.0" in nodes and "output/output.0" in nodes
    fc1, fc2 = nodes["Net/Linear[fc1]/Linear"], nodes["Net/Linear[fc2]/Linear"]
    assert list(fc1.input) == ["input/input.0"]
    relu = [n for n in g.node if n.op.lower().startswith("relu")]
    assert len(relu) == 1 and list(relu[0].input) == [fc1.name] and list(fc2.input) == [relu[0].name]
    assert list(nodes["output/output.0"].input) == [fc2.name]
    shape = [d.size for d in fc1.attr["_output_shapes"].list.shape[0].dim]
    assert shape == [3, 8]


def test_add_graph_with_ember_nn(tmp_path):
    import ember.nn as nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, ember.randn(3, 4))
    names = [n.name for n in load(tmp_path).Graph().node]
    assert "Sequential/Linear[0]/Linear" in names and "Sequential/ReLU[1]/ReLU" in names
