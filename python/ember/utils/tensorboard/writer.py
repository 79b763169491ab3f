"""SummaryWriter: records scalars, images, histograms, graphs, ... as TensorBoard event files."""
import os
import socket
import time
from datetime import datetime

import numpy as np
from google.protobuf import text_format
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.plugins.projector import projector_config_pb2

from . import summary as S
from ._record_writer import EventFileWriter

__all__ = ["SummaryWriter", "FileWriter"]


class FileWriter:
    """Events into one event file in ``log_dir`` (written on a background thread)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self._writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self._writer.logdir

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self._writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_def, walltime=None):
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir`` (default
    ``runs/<date>_<time>_<host><comment>``). The API is torch.utils.tensorboard's."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = None
        self.all_writers = {}
        self._get_file_writer()
        self.default_bins = S.default_bins()

    def _get_file_writer(self):
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard drops events at steps >= purge_step written before this restart.
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _summary(self, summ, global_step, walltime):
        self._get_file_writer().add_summary(summ, global_step, walltime)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._summary(S.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each tag's series goes to its own run ``log_dir/<main_tag>_<tag>``, under the
        one chart ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(base, main_tag.replace("/", "_") + "_" + tag)
            fw = self.all_writers.get(path)
            if fw is None:
                fw = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[path] = fw
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        self._summary(S.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._summary(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._summary(S.images(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, laid out as a grid) as an image."""
        if isinstance(figure, list):
            arrs = [S.figure_to_hwc(f, close) for f in figure]
            self.add_images(tag, np.stack(arrs), global_step, walltime, dataformats="NHWC")
        else:
            self.add_image(tag, S.figure_to_hwc(figure, close), global_step, walltime, dataformats="HWC")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._summary(S.text(tag, text_string), global_step, walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        self._summary(S.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step, walltime)

    def add_custom_scalars(self, layout):
        self._summary(S.custom_scalars(layout), None, None)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """Records one hparams session (in the run ``run_name``, default the current time) with
        its metrics as scalars."""
        exp, start, end = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, start, end):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of one forward pass of ``model`` on ``input_to_model`` (see _graph.py)."""
        from ._graph import build_graph
        graph = build_graph(model, input_to_model)
        if verbose:
            print(graph)
        self._get_file_writer().add_graph(graph)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Writes ``tensors.tsv`` (and ``metadata.tsv``, ``sprite.png``) into
        ``log_dir/<step>/<tag>/`` and registers them in ``projector_config.pbtxt``."""
        mat = S.to_numpy(mat)
        if mat.ndim != 2:
            raise ValueError(f"add_embedding: mat should be 2-D (N, D), got shape {mat.shape}")
        step = 0 if global_step is None else global_step
        subdir = f"{str(step).zfill(5)}/{tag.replace('/', '_')}"
        logdir = self._get_file_writer().get_logdir()
        save = os.path.join(logdir, subdir)
        os.makedirs(save, exist_ok=True)
        with open(os.path.join(save, "tensors.tsv"), "w") as f:
            for row in mat:
                f.write("\t".join(repr(float(v)) for v in row) + "\n")
        emb = projector_config_pb2.EmbeddingInfo(tensor_name=f"{tag}:{str(step).zfill(5)}",
                                                 tensor_path=f"{subdir}/tensors.tsv")
        if metadata is not None:
            if len(metadata) != mat.shape[0]:
                raise ValueError(f"add_embedding: {len(metadata)} metadata rows for {mat.shape[0]} points")
            with open(os.path.join(save, "metadata.tsv"), "w") as f:
                if metadata_header is not None:
                    f.write("\t".join(str(h) for h in metadata_header) + "\n")
                    for row in metadata:
                        f.write("\t".join(str(v) for v in row) + "\n")
                else:
                    for v in metadata:
                        f.write(f"{v}\n")
            emb.metadata_path = f"{subdir}/metadata.tsv"
        if label_img is not None:
            imgs = S.to_numpy(label_img)
            if imgs.shape[0] != mat.shape[0]:
                raise ValueError(f"add_embedding: {imgs.shape[0]} label images for {mat.shape[0]} points")
            self._write_sprite(imgs, save)
            emb.sprite.image_path = f"{subdir}/sprite.png"
            emb.sprite.single_image_dim.extend([imgs.shape[3], imgs.shape[2]])
        cfg_path = os.path.join(logdir, "projector_config.pbtxt")
        config = projector_config_pb2.ProjectorConfig()
        if os.path.exists(cfg_path):
            with open(cfg_path) as f:
                text_format.Parse(f.read(), config)
        config.embeddings.append(emb)
        with open(cfg_path, "w") as f:
            f.write(text_format.MessageToString(config))

    @staticmethod
    def _write_sprite(imgs, save):
        """The label images as one square sprite (N×C×H×W, values in [0, 1] or uint8)."""
        import ember

        from ...vision.utils import make_grid
        if imgs.ndim == 3:
            imgs = imgs[:, None]
        n = imgs.shape[0]
        nrow = int(np.ceil(np.sqrt(n)))
        t = ember.from_numpy(np.ascontiguousarray(imgs.astype(np.float32) / (255.0 if imgs.dtype == np.uint8 else 1.0)))
        pad = nrow * nrow - n
        if pad:
            t = ember.cat([t, ember.zeros((pad, *t.shape[1:]), dtype=t.dtype)])
        grid = make_grid(t, nrow=nrow, padding=0)
        arr = S.to_hwc_uint8(grid, "CHW")
        with open(os.path.join(save, "sprite.png"), "wb") as f:
            f.write(S._png(arr))

    def flush(self):
        for w in self.all_writers.values():
            w.flush()

    def close(self):
        for w in self.all_writers.values():
            w.close()
        self.file_writer = None
        self.all_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
