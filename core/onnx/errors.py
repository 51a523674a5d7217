"""The exporter's errors, with PyTorch's names (``torch.onnx.errors``)."""
from __future__ import annotations

from ..dispatch.schema.errors import EmberError


class OnnxExporterError(EmberError):
    """Export failed: the message names the op, the module path where it was met and what to change."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op has no ONNX lowering (or not for these arguments or this opset)."""


class SymbolicValueError(OnnxExporterError):
    """A value follows a dynamic axis where ONNX needs a fixed one, or follows it in a way the exporter cannot
    write as a function of the axes."""


class CheckerError(OnnxExporterError):
    """The written model fails ``onnx.checker.check_model(full_check=True)``: a bug in a lowering."""


__all__ = ["OnnxExporterError", "UnsupportedOperatorError", "SymbolicValueError", "CheckerError"]
