"""The operator declarations, one module per category, and the callable namespace built from them.

``ember.dispatch.ops.F`` holds one Python function per declared op; composite
definitions call other ops through it, so they run on any backend.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..dispatcher import call
from ..fastpath import make_function as make_fast
from ..schema import OPS, OpDef

F = SimpleNamespace()


def _generic(op: OpDef):
    def function(*args, **kwargs):
        return call(op, args, kwargs)
    return function


def _make_function(op: OpDef):
    fast = make_fast(op)
    function = fast or _generic(op)
    function.__name__ = op.name
    function.__module__, function.__qualname__ = __name__, f"F.{op.name}"  # so pickle finds it as F.<name> here
    function.__doc__ = f"{op.signature}\n\n{op.doc}".strip()
    function.op = op
    function.is_fast_path = fast is not None
    return function


def _populate() -> None:
    for name, op in OPS.items():
        setattr(F, name, _make_function(op))


from . import elementwise, reduction, views, creation, random, sampling, linalg, indexing, nn, layers, losses, optim, special  # noqa: E402,F401,E501
from . import closeness, repetition, amp  # noqa: E402,F401
from . import pointwise_losses, attention, recurrent  # noqa: E402,F401

_populate()
