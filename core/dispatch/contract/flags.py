"""The numerics switches programs set, kept here so that backends can read them.

PyTorch programs write ``torch.backends.cuda.matmul.allow_tf32 = True``, call
``torch.set_float32_matmul_precision("high")`` or ``torch.use_deterministic_algorithms(True)``.
Ember keeps every such setting in the one ``FLAGS`` object below; the PyTorch-shaped namespaces
(``ember.backends.cuda.matmul``, ``ember.backends.cudnn``, the ``ember.*`` functions) only read and
write it. A backend, which may import nothing of Ember's but ``ember.dispatch``, reads the settings
through ``FLAGS``, which ``ember.dispatch`` re-exports, for example::

    from ember.dispatch import FLAGS
    if FLAGS.float32_matmul_precision != "highest": ...   # TF32 / reduced-precision GEMMs allowed
    if FLAGS.deterministic: ...                          # pick a deterministic kernel

A backend that has no such choice (the NumPy CPU backend computes float32 GEMMs in float32)
ignores them, as PyTorch's CPU does.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

FLOAT32_MATMUL_PRECISIONS = ("highest", "high", "medium")
#: called as ``watcher(name, value)`` after each change of a flag (see ``watch``)
_WATCHERS: list[Callable[[str, Any], None]] = []


@dataclass
class Flags:
    """Process-wide settings; defaults are PyTorch's."""

    float32_matmul_precision: str = "highest"
    # matmul reductions of fp16/bf16 inputs may accumulate in reduced precision: (allowed, split-k allowed)
    fp16_reduced_precision_reduction: tuple = (True, True)
    bf16_reduced_precision_reduction: tuple = (True, True)
    fp16_accumulation: bool = False
    cudnn_enabled: bool = True
    cudnn_benchmark: bool = False
    cudnn_deterministic: bool = False
    cudnn_allow_tf32: bool = True
    deterministic: bool = False
    deterministic_warn_only: bool = False
    warn_always: bool = False  # warnings given once per process are given every time (torch.set_warn_always)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        for watcher in _WATCHERS:
            watcher(name, value)


FLAGS = Flags()


def watch(watcher: Callable[[str, Any], None]) -> None:
    """Call ``watcher(name, value)`` after every change of a flag from now on. For a backend whose library keeps
    a setting of its own (CuPy's GEMM compute type behind TF32): it follows the flag when it changes, instead of
    reading it on every call."""
    _WATCHERS.append(watcher)


def _require_bool(function: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{function}: {name} must be a bool, got {type(value).__name__}")
    return value


def set_float32_matmul_precision(precision: str) -> None:
    """Which internal precision float32 matrix products may use. As in PyTorch, an unknown value
    warns and changes nothing."""
    if not isinstance(precision, str):
        raise TypeError(f"set_float32_matmul_precision: precision must be a str, got {type(precision).__name__}")
    if precision not in FLOAT32_MATMUL_PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    FLAGS.float32_matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """"highest" (full float32), "high" (TF32 or similar allowed) or "medium" (bfloat16-based allowed)."""
    return FLAGS.float32_matmul_precision


float32_matmul_precision = get_float32_matmul_precision  # the short name backends read


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask every backend for deterministic kernels (``warn_only``: warn instead of raising where an op
    has none). Ember's CPU and OpenCL kernels are deterministic already."""
    FLAGS.deterministic = _require_bool("use_deterministic_algorithms", "mode", mode)
    FLAGS.deterministic_warn_only = _require_bool("use_deterministic_algorithms", "warn_only", warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return FLAGS.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return FLAGS.deterministic_warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


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


def set_warn_always(b: bool, /) -> None:
    """When True, warnings Ember gives once per process (a backend falling back to the CPU, ...) are given
    every time, as PyTorch's TORCH_WARN_ONCE sites under the same switch."""
    if not isinstance(b, bool):
        raise TypeError(f"set_warn_always(): argument 'b' must be bool, not {type(b).__name__}")
    FLAGS.warn_always = b


def is_warn_always_enabled() -> bool:
    return FLAGS.warn_always
