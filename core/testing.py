"""``ember.testing.assert_close``: PyTorch's comparison of tensors, numbers and nested containers.

Tensors (and NumPy arrays, compared with NumPy arrays) must agree in shape, and by default in
device and dtype; their values must be close in ``isclose``'s sense, with per-dtype default
tolerances. Numbers compare alike; sequences and mappings compare item by item. A failure raises
an AssertionError worded as PyTorch's (mismatched element count, greatest absolute and relative
difference and where), naming the item of a nested input that failed.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from .creation import from_numpy
from .dispatch.schema.dtypes import bfloat16, complex64, complex128, dtype as DType, float16, float32, float64, int64
from .dispatch.contract.host import c_contiguous
from .dispatch.ops import F
from .dispatch.schema.promotion import promote_types
from .tensor import Tensor

__all__ = ["assert_close"]

#: (rtol, atol) when neither is given (complex dtypes: their component's); dtypes not listed (integers, bool) compare
#: exactly.
DEFAULT_TOLERANCES: dict[DType, tuple[float, float]] = {
    float16: (1e-3, 1e-5), bfloat16: (1.6e-2, 1e-5), float32: (1.3e-6, 1e-5), float64: (1e-7, 1e-7),
    complex64: (1.3e-6, 1e-5), complex128: (1e-7, 1e-7)}
_PYTHON_FLOAT_TOLERANCES = DEFAULT_TOLERANCES[float64]


class _Mismatch(Exception):
    """A failed comparison: the message, and the path of the nested item where it happened."""

    def __init__(self, message: str, path: tuple = ()) -> None:
        super().__init__(message)
        self.message, self.path = message, path


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` are close (see the module docstring).

    ``rtol`` and ``atol`` go together: give both or neither. ``msg`` replaces the generated message,
    or, when callable, receives it and returns the message to raise. ``check_layout`` is accepted
    for PyTorch's signature: every Ember tensor is strided.
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        message = failure.message
        if failure.path:
            message += "\n\nThe failure occurred for item " + "".join(f"[{key!r}]" for key in failure.path)
        if callable(msg):
            message = msg(message)
        elif msg is not None:
            message = msg
        raise AssertionError(message) from None


def _compare(actual, expected, path: tuple, options: dict) -> None:
    if actual is None and expected is None:
        return
    if _is_tensor_like(actual) and _is_tensor_like(expected) and type(actual) is type(expected):
        return _compare_tensors(actual, expected, path, options)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, path, options)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return _compare_mappings(actual, expected, path, options)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (i,), options)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def _is_tensor_like(value) -> bool:
    return isinstance(value, (Tensor, np.ndarray))


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.number, np.bool_))


def _is_sequence(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _compare_mappings(actual: Mapping, expected: Mapping, path: tuple, options: dict) -> None:
    if set(actual) != set(expected):
        missing = sorted(set(expected) - set(actual), key=repr)
        extra = sorted(set(actual) - set(expected), key=repr)
        raise _Mismatch(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: {missing}\n"
                        f"Additional keys in the actual mapping: {extra}", path)
    for key in actual:
        _compare(actual[key], expected[key], path + (key,), options)


# -- numbers -------------------------------------------------------------------------------------

def _compare_numbers(actual, expected, path: tuple, options: dict) -> None:
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) != bool(expected):
            raise _Mismatch(f"Booleans mismatch: {actual} is not {expected}", path)
        return
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        floating = any(isinstance(v, (float, complex, np.inexact)) for v in (actual, expected))
        rtol, atol = _PYTHON_FLOAT_TOLERANCES if floating else (0.0, 0.0)
    if _numbers_close(actual, expected, rtol, atol, options["equal_nan"]):
        return
    difference = abs(actual - expected)
    relative = difference / abs(expected) if expected != 0 else (math.nan if difference != difference else math.inf)
    raise _Mismatch(_scalar_message(actual, expected, difference, relative, rtol, atol), path)


def _numbers_close(actual, expected, rtol: float, atol: float, equal_nan: bool) -> bool:
    if actual == expected:
        return True
    if equal_nan and actual != actual and expected != expected:
        return True
    difference = abs(actual - expected)
    return math.isfinite(difference) and difference <= atol + rtol * abs(expected)


def _scalar_message(actual, expected, difference, relative, rtol, atol) -> str:
    exact = rtol == 0 and atol == 0
    return (f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {difference}{_allowed(atol, exact)}\n"
            f"Relative difference: {relative}{_allowed(rtol, exact)}")


def _allowed(tolerance: float, exact: bool) -> str:
    return "" if exact else f" (up to {tolerance} allowed)"


# -- tensors ---------------------------------------------------------------------------------------

def _as_tensor(value) -> Tensor:
    return from_numpy(c_contiguous(value)) if isinstance(value, np.ndarray) else value


def _compare_tensors(actual, expected, path: tuple, options: dict) -> None:
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    _check_attributes(actual, expected, path, options)
    tolerances = (options["rtol"], options["atol"])
    if tolerances[0] is None:
        pairs = [DEFAULT_TOLERANCES.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        tolerances = (max(p[0] for p in pairs), max(p[1] for p in pairs))
    rtol, atol = tolerances
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype is not expected.dtype:
        common = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    actual, expected = actual.detach(), expected.detach()
    matches = F.isclose(actual, expected, rtol, atol, options["equal_nan"])
    if bool(F.all(matches).item()):
        return
    raise _Mismatch(_tensor_message(actual, expected, matches, rtol, atol), path)


def _check_attributes(actual: Tensor, expected: Tensor, path: tuple, options: dict) -> None:
    checks = [("shape", lambda t: t.shape)]
    if options["check_device"]:
        checks.append(("device", lambda t: t.device))
    if options["check_dtype"]:
        checks.append(("dtype", lambda t: t.dtype))
    if options["check_stride"]:
        checks.append(("stride()", lambda t: t.stride()))
    for name, read in checks:
        a, e = read(actual), read(expected)
        if a != e:
            shown = (str(a), str(e)) if name == "device" else (repr(a), repr(e))
            raise _Mismatch(f"The values for attribute '{name}' do not match: {shown[0]} != {shown[1]}.", path)


def _tensor_message(actual: Tensor, expected: Tensor, matches: Tensor, rtol: float, atol: float) -> str:
    shown = (actual.item(), expected.item()) if actual.ndim == 0 else None
    if actual.dtype.kind not in ("float", "complex"):  # differences of integers and bools, without wrapping around
        actual, expected = actual.to(int64), expected.to(int64)
    difference = F.abs(F.sub(actual, expected))
    relative = F.div(difference, F.abs(expected))
    if shown is not None:
        return _scalar_message(*shown, difference.item(), relative.item(), rtol, atol)
    exact = rtol == 0 and atol == 0
    mismatched, total = int(F.sum(F.logical_not(matches)).item()), actual.numel()
    largest_difference, at = _greatest(F.where(matches, F.zeros_like(difference), difference))
    largest_relative, relative_at = _greatest(F.where(matches, F.zeros_like(relative), relative))
    return (f"Tensor-likes are not {'equal' if exact else 'close'}!\n\n"
            f"Mismatched elements: {mismatched} / {total} ({100 * mismatched / total:.1f}%)\n"
            f"Greatest absolute difference: {largest_difference} at index {at}{_allowed(atol, exact)}\n"
            f"Greatest relative difference: {largest_relative} at index {relative_at}{_allowed(rtol, exact)}")


def _greatest(values: Tensor) -> tuple:
    """The largest value (a NaN counts as largest, the first one wins) and its index as a tuple."""
    flat = F.reshape(values, (-1,))
    nans = F.isnan(flat) if flat.dtype.is_floating_point else None
    if nans is not None and bool(F.any(nans).item()):
        position = int(F.argmax(F.to_dtype(nans, int64)).item())
    else:
        position = int(F.argmax(flat).item())
    return flat[position].item(), tuple(int(i) for i in np.unravel_index(position, tuple(values.shape)))
