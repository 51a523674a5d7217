"""Allocation failures as Ember's ``OutOfMemoryError``: how many bytes, for which op, on which device.

Two places use this. Validation refuses, before any kernel runs, a result larger than any device can
address (``ones(2**62)``), so the array library never sees it. The executor turns the ``MemoryError`` a
backend raises for an allocation that is possible in principle but failed (terabytes on a laptop) into
``OutOfMemoryError``, as PyTorch raises ``torch.OutOfMemoryError``. A backend that knows more than the array
library's error says (its device's capacity, what is free, what its cache holds) raises an error that is both
a ``MemoryError`` and an ``OutOfMemoryError`` with those figures, or offers the optional hook
``out_of_memory(error, index)`` that makes one from its array library's error (docs/backends.md); either
way the message gains the op's name and its inputs here.
"""
from __future__ import annotations

import math
import sys

from ..schema.errors import OutOfMemoryError, ShapeError, describe_all

#: The most bytes one array can span: NumPy, CuPy and OpenCL index memory with a signed 64-bit size.
ADDRESSABLE = sys.maxsize


def _result_shapes(meta_result) -> list:
    """The output shapes a meta function gave: one shape, or one per output; sizes it cannot know
    before running (None, as for nonzero) leave that output out."""
    def is_shape(s):
        return isinstance(s, (tuple, list)) and all(isinstance(d, int) for d in s)
    if is_shape(meta_result):
        return [tuple(meta_result)]
    if isinstance(meta_result, (tuple, list)):
        return [tuple(s) for s in meta_result if is_shape(s)]
    return []


def _with_dtypes(shapes: list, out) -> list:
    dtypes = out if isinstance(out, tuple) else (out,) * len(shapes)
    return [(s, d) for s, d in zip(shapes, dtypes) if d is not None]


def result_bytes(meta_result, out) -> int:
    """The bytes the results of one call take: the sum over outputs of elements times item size."""
    return sum(math.prod(s) * d.itemsize for s, d in _with_dtypes(_result_shapes(meta_result), out))


def _in_units(nbytes: int) -> str:
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if nbytes >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} bytes"


def _inputs(operands) -> str:
    return f"; inputs: {describe_all(operands)}" if operands else ""


def check_addressable(op, meta_result, out, device, operands, allocates: bool = True) -> None:
    """Refuse results no device can hold: OutOfMemoryError for more bytes than can be addressed, ShapeError
    where nothing is allocated (a view, an empty shape) but the dims span that much (no array can index it)."""
    for shape, dtype in _with_dtypes(_result_shapes(meta_result), out):
        if math.prod(d for d in shape if d) * dtype.itemsize <= ADDRESSABLE:
            continue
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes and allocates:
            raise OutOfMemoryError(
                f"{op.name}: cannot allocate {nbytes} bytes ({_in_units(nbytes)}) on {device} for a result of "
                f"shape {shape} and dtype {dtype.name}: more than the {ADDRESSABLE} bytes a device can address"
                f"{_inputs(operands)}")
        raise ShapeError(f"{op.name}: a result of shape {shape} and dtype {dtype.name} cannot be represented: its "
                         f"dims span more than {ADDRESSABLE} bytes{_inputs(operands)}")


def _described_by_backend(plan, error: MemoryError) -> MemoryError:
    """The backend's own OutOfMemoryError for ``error``, from its optional ``out_of_memory(error, index)`` hook
    (None there: not an error it knows), else ``error`` as it is."""
    hook = getattr(plan.backend, "out_of_memory", None)
    return (hook(error, plan.device.index) if hook is not None else None) or error


def out_of_memory(plan, values: list, error: MemoryError) -> OutOfMemoryError:
    """The OutOfMemoryError for a backend's MemoryError while running ``plan`` on ``values``."""
    op = plan.op
    operands = [values[i] for i in op.tensor_positions if hasattr(values[i], "_data")]
    if not isinstance(error, OutOfMemoryError):
        error = _described_by_backend(plan, error)
    if isinstance(error, OutOfMemoryError):  # the backend's own words, with its device's figures
        return OutOfMemoryError(f"{op.name}: {error}{_inputs(operands)}")
    try:
        nbytes = result_bytes(op.meta(*values), plan.out)
        asked = f"tried to allocate {nbytes} bytes ({_in_units(nbytes)}) for its result"
    except Exception:  # noqa: BLE001 - the meta could not say; the backend's own words follow
        asked = "an allocation failed"
    detail = str(error).strip()
    return OutOfMemoryError(f"{op.name}: out of memory on {plan.device}: {asked}"
                            f"{f' ({detail})' if detail else ''}{_inputs(operands)}")


__all__ = ["ADDRESSABLE", "check_addressable", "out_of_memory", "result_bytes"]
