"""NumPy's keyword names on the torch-level functions and Tensor methods written in Python.

PyTorch's argument parser takes ``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for
``input`` and ``x2`` for ``other`` on every op it binds (``torch.max(t, axis=0)``, ``t.median(keepdims=True)``).
Ember's schema ops take them in the binder (``NUMPY_KEYWORDS``); this gives the same to Ember's hand-written
functions, except those PyTorch itself writes in Python (``TORCH_PYTHON_DEFINED``), which take only their own
names there too.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from ..dispatch.schema.binding import NUMPY_KEYWORDS

#: Functions and methods PyTorch defines in Python (``torch.functional``, ``torch._tensor``): Python's own
#: binding rejects NumPy's names for them, so Ember's do too.
TORCH_PYTHON_DEFINED = frozenset({
    "split", "norm", "unique", "unique_consecutive", "stft", "istft", "tensordot", "einsum", "meshgrid",
    "cdist", "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors", "broadcast_shapes",
    "cartesian_prod", "chain_matmul", "lu", "unravel_index", "align_to", "refine_names", "rename",
    "unflatten", "module_load", "share_memory_", "backward", "register_hook",
})


def accepting_numpy_names(name: str, function: Callable) -> Callable:
    """``function``, taking NumPy's keyword names for the parameters it has; itself where none applies (an
    op's generated function, whose binder renames on its error path, or a function PyTorch writes in Python).
    The renaming costs a dict check, and only on calls that pass keywords."""
    if (getattr(function, "op", None) is not None or name in TORCH_PYTHON_DEFINED or name.startswith("__")
            or not callable(function)):
        return function  # Python's operators and protocols take no keywords
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function
    renames = {numpy: own for numpy, own in NUMPY_KEYWORDS.items() if own in parameters and numpy not in parameters}
    if not renames:
        return function

    @functools.wraps(function)
    def with_numpy_names(*args, **kwargs):
        if kwargs and not renames.keys().isdisjoint(kwargs):
            kwargs = {renames[key] if key in renames and renames[key] not in kwargs else key: value
                      for key, value in kwargs.items()}
        return function(*args, **kwargs)
    with_numpy_names.__signature__ = inspect.signature(function)  # help() and the stubs read the function's own
    return with_numpy_names


def accept_numpy_names_in(namespace: dict) -> None:
    """Every public function of ``namespace`` (a module's globals) that Ember defines, taking NumPy's names.
    One wrapper per function, so that aliases stay the same object."""
    wrapped: dict[int, Callable] = {}
    for name, value in list(namespace.items()):
        if inspect.isfunction(value) and not name.startswith("_") and value.__module__.startswith("ember."):
            namespace[name] = wrapped.setdefault(id(value), accepting_numpy_names(name, value))
