"""``ember.utils.tensorboard``: PyTorch's ``SummaryWriter``, writing TensorBoard event files.

It needs the ``tensorboard`` package (its event-file writer and protocol buffers), an optional
dependency: ``pip install ember[tensorboard]``. Neither torch nor TensorFlow is needed.
"""
from __future__ import annotations

_MINIMUM = (2, 14)
_INSTALL = "pip install ember[tensorboard]  (or: pip install 'tensorboard>=2.14')"

try:
    import tensorboard as _tensorboard
except ImportError as error:
    raise ImportError(f"ember.utils.tensorboard needs the tensorboard package, which is not installed: "
                      f"{_INSTALL}") from error


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


if _version(getattr(_tensorboard, "__version__", "0")) < _MINIMUM:
    raise ImportError(f"ember.utils.tensorboard needs tensorboard>=2.14, found "
                      f"{getattr(_tensorboard, '__version__', 'an unknown version')}: {_INSTALL}")

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
