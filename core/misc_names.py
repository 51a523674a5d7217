"""Small torch-level names: math constants, ``typename``, ``get_device``, the deterministic debug mode."""
from __future__ import annotations

import math
from typing import Any

from .dispatch.flags import FLAGS, use_deterministic_algorithms

e: float = math.e
pi: float = math.pi
inf: float = math.inf
nan: float = math.nan
newaxis = None  # ``x[:, ember.newaxis]`` adds a dimension, as None does

_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def typename(obj: Any, /) -> str:
    """The type's name as PyTorch spells it: a tensor's legacy type (``torch.FloatTensor``, as
    ``Tensor.type()`` returns it), else ``module.QualifiedName`` (builtins unqualified)."""
    from .tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in (None, "builtins") else f"{module}.{name}"


def get_device(input, /) -> int:
    """``input.get_device()``: the device index, -1 on the CPU."""
    return input.get_device()


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """0/'default': any kernel; 1/'warn': warn where an op has no deterministic kernel; 2/'error': raise there.
    The same switch as ``use_deterministic_algorithms``."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"set_deterministic_debug_mode: invalid mode {debug_mode!r}; expected one of "
                               f"'default', 'warn', 'error'")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"set_deterministic_debug_mode: debug_mode must be an int or str, got "
                        f"{type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"set_deterministic_debug_mode: invalid mode {debug_mode}; expected 0, 1 or 2")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as ``set_deterministic_debug_mode`` sets them."""
    if not FLAGS.deterministic:
        return 0
    return 1 if FLAGS.deterministic_warn_only else 2
