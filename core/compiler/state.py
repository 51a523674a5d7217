"""Whether a capture is running, and the marker for functions that stay eager inside captured code.

Kept free of imports from the rest of the compiler, so that ``ember.optim`` and ``ember.amp`` can mark
their stepping functions without importing it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

#: The capture in progress (a ``capture.Tracer``), or None.
capturing: Any = None


def is_compiling() -> bool:
    """True while ``ember.compile`` is capturing a program (PyTorch's ``torch.compiler.is_compiling``)."""
    return capturing is not None


def runs_eagerly(function: Callable) -> Callable:
    """Mark ``function`` to run as itself every time, also inside compiled code: a captured program records
    the call and makes it again at each replay, with the tensors of that replay. For functions whose
    Python side effects matter on every call (``optimizer.step()``, a learning-rate scheduler's ``step()``)
    or that read tensor values on the host (``GradScaler.step``)."""
    if getattr(function, "_ember_runs_eagerly", False):
        return function

    @functools.wraps(function)
    def eager(*args, **kwargs):
        tracer = capturing
        if tracer is None or tracer.paused:
            return function(*args, **kwargs)
        return tracer.opaque(function, args, kwargs)
    eager._ember_runs_eagerly = True
    eager._ember_eager_function = function
    return eager


#: id(module) -> the compiled function its calls go to: set while a compiled function whose own capture
#: broke runs eagerly, so that the modules it calls still run compiled (``Module.__call__`` reads it).
module_overrides: dict = {}
__all__ = ["capturing", "is_compiling", "runs_eagerly", "module_overrides"]
