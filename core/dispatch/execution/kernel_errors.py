"""What a kernel raises, as Ember's typed errors, in one place: ``dispatcher.call`` and the fast path's entry
points catch these around running a plan (free unless raised), for every backend, bundled or third-party.

- ``MemoryError``: an allocation failed: ``OutOfMemoryError`` naming the op and the bytes asked for
  (``memory``); the bundled device backends raise one that is already an ``OutOfMemoryError`` with the
  device's figures (``ember.backends.device_memory``), and it only gains the op's name.
- ``OverflowError``: a Python number the kernel could not convert (``int_tensor * 2**70``; PyTorch:
  "Overflow when unpacking long"): ``NumberOverflowError``.
- ``ZeroDivisionError``: integer division by zero: ``DivisionByZeroError``.
"""
from __future__ import annotations

from ..schema.errors import DivisionByZeroError, EmberError, NumberOverflowError, describe_all
from .memory import out_of_memory

#: The exceptions a kernel may raise that become typed errors here.
KERNEL_ERRORS = (MemoryError, OverflowError, ZeroDivisionError)


def kernel_error(plan, values: list, error: BaseException) -> EmberError:
    """The typed error for ``error``, raised by a kernel while running ``plan`` on ``values``."""
    if isinstance(error, MemoryError):
        return out_of_memory(plan, values, error)
    if isinstance(error, EmberError):
        return error
    op = plan.op
    operands = [values[i] for i in op.tensor_positions if i < len(values)]
    detail = str(error).strip()
    inputs = f"; operands: {describe_all(operands)}" if operands else ""
    if isinstance(error, ZeroDivisionError):
        return DivisionByZeroError(f"{op.name}: integer division by zero{inputs}")
    compute = getattr(plan.compute, "name", None) or "its dtype"
    return NumberOverflowError(f"{op.name}: Overflow when unpacking long: a Python number does not fit {compute} "
                               f"({detail}){inputs}")


__all__ = ["KERNEL_ERRORS", "kernel_error"]
