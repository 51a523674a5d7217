"""Export options with PyTorch's names, importable without the ``onnx`` package."""
from __future__ import annotations

import enum


class TrainingMode(enum.IntEnum):
    """The module mode during export (``torch.onnx.TrainingMode``): EVAL (the default) puts the model in eval
    mode for the export and restores it after; PRESERVE keeps its mode; TRAINING exports it in training mode."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """``torch.onnx.OperatorExportTypes``: Ember writes standard ONNX ops only (ONNX)."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


__all__ = ["TrainingMode", "OperatorExportTypes"]
