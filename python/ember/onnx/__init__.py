"""ember.onnx: export a model to ONNX (torch.onnx's API).

``export`` traces the model (ember.jit.trace), inlines and freezes the graph (parameters
become initializers), runs the graph passes, and maps each op to ONNX nodes
(``_symbolics.py``), written with the ``onnx`` package's protobufs and checked with
``onnx.checker``. An op without a mapping raises ``UnsupportedOperatorError`` naming it.
"""
from __future__ import annotations

import enum

from ._export import UnsupportedOperatorError, export

__all__ = ["export", "TrainingMode", "OperatorExportTypes", "UnsupportedOperatorError",
           "is_in_onnx_export"]


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def is_in_onnx_export():
    from . import _export
    return _export._EXPORTING
