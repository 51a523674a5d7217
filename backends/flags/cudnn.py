"""``ember.backends.cudnn``: ``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` (module
attributes, read and written as in ``torch.backends.cudnn``), ``is_available()``, ``version()``, ``flags()``.

The attributes live in ``ember.dispatch.FLAGS``; this module's class is swapped for one with
properties (as PyTorch does) so that ``ember.backends.cudnn.benchmark = True`` reaches them.
"""
from __future__ import annotations

import contextlib
import sys
import types

from ember.dispatch import FLAGS

_ATTRIBUTES = {"enabled": "cudnn_enabled", "benchmark": "cudnn_benchmark",
               "deterministic": "cudnn_deterministic", "allow_tf32": "cudnn_allow_tf32"}


def is_available() -> bool:
    """Whether the cuda backend can run here and NVIDIA's cuDNN frontend (``nvidia-cudnn-frontend``) loads
    libcudnn (used for convolutions: ``ember.backends.cuda.cudnn``)."""
    from ember import cuda
    if not cuda.is_available():
        return False
    from ember.backends.cuda.cudnn import load
    return load() is not None


def version() -> int | None:
    """cuDNN's version number, or None where it is not available (PyTorch's answer on such machines)."""
    if not is_available():
        return None
    from ember.backends.cuda.cudnn import version as library_version
    return library_version()


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False, allow_tf32: bool = True):
    """Set the four switches for a ``with`` block, then restore them (PyTorch's defaults for the arguments)."""
    saved = {field: getattr(FLAGS, field) for field in _ATTRIBUTES.values()}
    for name, value in (("enabled", enabled), ("benchmark", benchmark), ("deterministic", deterministic),
                        ("allow_tf32", allow_tf32)):
        _set(name, value)
    try:
        yield
    finally:
        for field, value in saved.items():
            setattr(FLAGS, field, value)


def _set(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"ember.backends.cudnn.{name} expects a bool, got {value!r}")
    setattr(FLAGS, _ATTRIBUTES[name], value)


def _property(name: str) -> property:
    return property(lambda module: getattr(FLAGS, _ATTRIBUTES[name]), lambda module, value: _set(name, value))


class _CudnnModule(types.ModuleType):
    enabled = _property("enabled")
    benchmark = _property("benchmark")
    deterministic = _property("deterministic")
    allow_tf32 = _property("allow_tf32")


sys.modules[__name__].__class__ = _CudnnModule
