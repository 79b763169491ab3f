"""Summary protos for each kind of data SummaryWriter records (TensorBoard's own messages)."""
import io
import time

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_pb2
from tensorboard.plugins.pr_curve import plugin_data_pb2 as pr_pb2
from tensorboard.plugins.text import plugin_data_pb2 as text_pb2

import ember


def to_numpy(x):
    if isinstance(x, ember.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    return np.asarray(x)


def _shape(*dims):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in dims])


def scalar(tag, value, new_style=False, double_precision=False):
    v = to_numpy(value).squeeze()
    if v.ndim != 0:
        raise ValueError(f"add_scalar: scalar_value should be a scalar (one element), got shape {v.shape}")
    v = float(v)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=v)])
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    if double_precision:
        t = TensorProto(dtype="DT_DOUBLE", double_val=[v], tensor_shape=_shape())
    else:
        t = TensorProto(dtype="DT_FLOAT", float_val=[v], tensor_shape=_shape())
    return Summary(value=[Summary.Value(tag=tag, tensor=t, metadata=meta)])


def default_bins():
    """TensorFlow's exponential histogram buckets (±1e-12 growing by 10% to ±1e20)."""
    pos = 1e-12 * 1.1 ** np.arange(int(np.ceil(np.log(1e32) / np.log(1.1))))
    pos = pos[pos < 1e20]
    return np.concatenate([-pos[::-1], [0.0], pos])


def histogram(tag, values, bins="tensorflow", max_bins=None):
    values = to_numpy(values).astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram: the values are empty")
    if bins == "tensorflow":
        bins = default_bins()
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins + (len(counts) % max_bins != 0)
        pad = (-len(counts)) % sub
        counts = np.pad(counts, (0, pad)).reshape(-1, sub).sum(axis=1)
        limits = np.concatenate([limits[:-1:sub], limits[-1:]])
    counts = counts.astype(np.float64)
    cum = np.cumsum(counts > 0)
    start, end = (int(i) for i in np.searchsorted(cum, [0, cum[-1] - 1], side="right"))
    end += 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    hist = HistogramProto(min=float(values.min()), max=float(values.max()), num=float(values.size),
                          sum=float(values.sum()), sum_squares=float(values.dot(values)),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=hist)])


def _png(arr):
    from ...vision.utils import _png_bytes
    try:
        from PIL import Image
    except ImportError:
        return _png_bytes(arr)
    buf = io.BytesIO()
    Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr).save(buf, format="PNG")
    return buf.getvalue()


def to_hwc_uint8(img, dataformats):
    """An image (any of CHW, HWC, HW, ... layouts) as an H×W×C uint8 array, C in {1, 3, 4};
    float images are taken to be in [0, 1]."""
    arr = to_numpy(img)
    fmt = dataformats.upper()
    if len(fmt) != arr.ndim or len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW"):
        raise ValueError(f"dataformats {dataformats!r} does not describe an array of shape {arr.shape}")
    if "C" not in fmt:
        arr, fmt = arr[..., None], fmt + "C"
    arr = arr.transpose([fmt.index(c) for c in "HWC"])
    if arr.shape[2] not in (1, 3, 4):
        raise ValueError(f"an image needs 1, 3 or 4 channels, got {arr.shape[2]}")
    if arr.dtype != np.uint8:
        arr = np.clip(arr.astype(np.float64) * 255 + 0.5, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(arr)


def image_from_hwc(tag, arr):
    h, w, c = arr.shape
    im = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=_png(arr))
    return Summary(value=[Summary.Value(tag=tag, image=im)])


def image(tag, img, dataformats="CHW"):
    return image_from_hwc(tag, to_hwc_uint8(img, dataformats))


def images(tag, imgs, dataformats="NCHW"):
    arr = to_numpy(imgs)
    fmt = dataformats.upper()
    if len(fmt) != arr.ndim or "N" not in fmt:
        raise ValueError(f"add_images: dataformats {dataformats!r} does not describe shape {arr.shape}")
    if "C" not in fmt:
        arr, fmt = arr[..., None], fmt + "C"
    arr = arr.transpose([fmt.index(c) for c in "NCHW"])
    from ...vision.utils import make_grid
    grid = make_grid(ember.from_numpy(np.ascontiguousarray(arr)), nrow=8, padding=0)
    return image(tag, grid, "CHW")


def figure_to_hwc(fig, close=True):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    arr = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
    if close:
        import matplotlib.pyplot as plt
        plt.close(fig)
    return arr


def text(tag, string):
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=text_pb2.TextPluginData(version=0).SerializeToString()))
    t = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf-8")], tensor_shape=_shape(1))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=t)])


def compute_pr_curve(labels, predictions, num_thresholds=127, weights=None):
    """tp, fp, tn, fn, precision, recall at ``num_thresholds`` thresholds in [0, 1]."""
    labels = to_numpy(labels).reshape(-1).astype(np.float64)
    predictions = to_numpy(predictions).reshape(-1).astype(np.float64)
    if labels.shape != predictions.shape:
        raise ValueError(f"add_pr_curve: labels {labels.shape} and predictions {predictions.shape} differ")
    if predictions.size and (predictions.min() < 0 or predictions.max() > 1):
        raise ValueError("add_pr_curve: predictions must lie in [0, 1]")
    w = 1.0 if weights is None else to_numpy(weights).reshape(-1).astype(np.float64)
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int64)
    rng = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=rng, weights=labels * w)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=rng, weights=(1.0 - labels) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    num_thresholds = min(num_thresholds, 127)
    data = compute_pr_curve(labels, predictions, num_thresholds, weights)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="pr_curves",
        content=pr_pb2.PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()))
    t = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                    tensor_shape=_shape(*data.shape))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=t)])


def custom_scalars(layout):
    """``layout``: {category: {chart: ["Multiline", [tags]] or ["Margin", [value, lower, upper]]}}."""
    categories = []
    for title, charts in layout.items():
        chart_protos = []
        for name, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError("a Margin chart takes [value, lower, upper] tags")
                series = [layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])]
                chart_protos.append(layout_pb2.Chart(title=name, margin=layout_pb2.MarginChartContent(series=series)))
            elif kind == "Multiline":
                chart_protos.append(layout_pb2.Chart(title=name, multiline=layout_pb2.MultilineChartContent(tag=tags)))
            else:
                raise ValueError(f"add_custom_scalars: chart kind must be 'Multiline' or 'Margin', got {kind!r}")
        categories.append(layout_pb2.Category(title=title, chart=chart_protos))
    lay = layout_pb2.Layout(category=categories)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="custom_scalars"))
    t = TensorProto(dtype="DT_STRING", string_val=[lay.SerializeToString()], tensor_shape=_shape())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=t, metadata=meta)])


def _hparams_summary(tag, plugin_data):
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="hparams", content=plugin_data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The experiment, session-start and session-end summaries of the HParams plugin."""
    from google.protobuf import struct_pb2
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("hparam_dict and metric_dict should be dictionaries.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    infos, start = [], hparams_pb2.SessionStartInfo(start_time_secs=time.time())
    for k, v in hparam_dict.items():
        if isinstance(v, ember.Tensor):
            v = v.item()
        if isinstance(v, bool):
            start.hparams[k].bool_value = v
            typ = api_pb2.DATA_TYPE_BOOL
        elif isinstance(v, (int, float)):
            start.hparams[k].number_value = float(v)
            typ = api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(v, str):
            start.hparams[k].string_value = v
            typ = api_pb2.DATA_TYPE_STRING
        elif v is None:
            start.hparams[k].string_value = "None"
            typ = api_pb2.DATA_TYPE_STRING
        else:
            raise ValueError(f"add_hparams: value of {k!r} should be bool, int, float, str or "
                             f"a one-element tensor, got {type(v).__name__}")
        info = api_pb2.HParamInfo(name=k, type=typ)
        if k in hparam_domain_discrete:
            info.domain_discrete.CopyFrom(struct_pb2.ListValue(values=[
                struct_pb2.Value(number_value=d) if isinstance(d, (int, float)) and not isinstance(d, bool)
                else struct_pb2.Value(bool_value=d) if isinstance(d, bool)
                else struct_pb2.Value(string_value=str(d)) for d in hparam_domain_discrete[k]]))
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    exp = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = hparams_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
    return (_hparams_summary("_hparams_/experiment", hparams_pb2.HParamsPluginData(version=0, experiment=exp)),
            _hparams_summary("_hparams_/session_start_info",
                             hparams_pb2.HParamsPluginData(version=0, session_start_info=start)),
            _hparams_summary("_hparams_/session_end_info",
                             hparams_pb2.HParamsPluginData(version=0, session_end_info=end)))


__all__ = ["scalar", "histogram", "image", "images", "text", "pr_curve", "custom_scalars", "hparams"]
