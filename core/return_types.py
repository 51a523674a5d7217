"""``ember.return_types``: the named tuple classes of the ops that return several tensors, as
``torch.return_types`` (``isinstance(ember.max(x, 1), ember.return_types.max)``; fields ``values``,
``indices`` ...). A class is looked up by op name and is the very class the op's results are made from."""
from __future__ import annotations

from .dispatch.execution.executor import result_type
from .dispatch.schema import OPS


def _returns_several(op) -> bool:
    return len(op.outputs) > 1 and op.outputs != ("*",)


def __getattr__(name: str) -> type:
    op = OPS.get(name)
    if op is None or not _returns_several(op):
        raise AttributeError(f"ember.return_types has no {name!r}: it is not an op that returns several tensors")
    return result_type(op)


def __dir__() -> list[str]:
    return sorted(name for name, op in OPS.items() if _returns_several(op) and not name.startswith("_"))
