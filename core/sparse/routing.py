"""Sparse operands of ``ember``'s functions: ``ember.mm(sparse, dense)``, ``ember.add``, ``ember.sin``, ...

The functions ``ember`` gets from the op schema take dense tensors. For the names PyTorch also runs on
sparse tensors, ``install`` puts a thin wrapper in their place that hands a call with a sparse operand (one
of the first two arguments) to ``ember.sparse`` and any other call, unchanged, to the op's function (one
``isinstance`` test each). Tensor methods need no wrapper: a sparse tensor is a ``SparseTensor``, whose
own methods and reflected operators (``dense + sparse``) take precedence.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from . import elementwise, products, reductions
from .tensor import SparseTensor


def _sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    if keepdim:
        raise RuntimeError("sum: keepdim=True is not supported for sparse tensors")
    return reductions.sum(input, dim, dtype)


def _sparse_versions() -> dict[str, Callable]:
    found: dict[str, Callable] = {
        "mm": products.mm, "matmul": products.matmul, "addmm": products.addmm, "sum": _sum,
        "add": elementwise.add, "sub": elementwise.sub, "subtract": elementwise.sub, "mul": elementwise.mul,
        "multiply": elementwise.mul, "div": elementwise.div, "divide": elementwise.div,
        "true_divide": elementwise.div, "pow": elementwise.pow}
    for name in elementwise.UNARY:
        found[name] = functools.partial(elementwise.unary, name)
    return found


def sparse_aware(dense: Callable, sparse: Callable) -> Callable:
    """``dense``, but calls with a sparse tensor among the first two arguments go to ``sparse``."""
    @functools.wraps(dense)
    def function(*args, **kwargs):
        if args and (args[0].__class__ is SparseTensor or (len(args) > 1 and args[1].__class__ is SparseTensor)):
            return sparse(*args, **kwargs)
        if kwargs and any(v.__class__ is SparseTensor for v in kwargs.values()):
            return sparse(*args, **kwargs)
        return dense(*args, **kwargs)
    function.__sparse_aware__ = True
    try:
        function.__signature__ = inspect.signature(dense)  # help() and the stubs read the dense function's
    except (TypeError, ValueError):
        pass
    return function


def _named(function: Callable, name: str) -> Callable:
    """Pickle finds the wrapper as ``ember.<name>`` (functools.wraps gave it the op function's path)."""
    function.__module__, function.__qualname__ = "ember", name
    return function


def install(namespace: dict[str, Any]) -> None:
    """Wrap ``namespace``'s functions that have a sparse version (``ember``'s, once, at import)."""
    wrapped: dict[int, Callable] = {}  # one wrapper per function: an alias stays the same object (absolute, abs)
    for name, sparse in _sparse_versions().items():
        dense = namespace.get(name)
        if dense is not None and not getattr(dense, "__sparse_aware__", False):
            if id(dense) not in wrapped:
                wrapped[id(dense)] = _named(sparse_aware(dense, sparse), name)
            namespace[name] = wrapped[id(dense)]
