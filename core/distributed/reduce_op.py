"""``ReduceOp``: the reductions a collective can apply, named as PyTorch names them."""
from __future__ import annotations

import enum


class RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


class ReduceOp:
    """``dist.ReduceOp.SUM`` etc.; ``ReduceOp(ReduceOp.MAX)`` also works, as in PyTorch."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR

    def __new__(cls, op: "RedOpType | ReduceOp" = RedOpType.SUM):
        return as_red_op(op, "ReduceOp")


def as_red_op(op, where: str) -> RedOpType:
    """``op`` as a ``RedOpType``, or a TypeError naming the function that received it."""
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"{where}: op must be a dist.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), got {op!r}")
