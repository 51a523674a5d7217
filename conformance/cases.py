"""Which (op, dtype) pairs a backend is tested on, read off the op schema.

The dtype of a case is the dtype of the op's tensor inputs, or for ops without tensor
inputs (creation, random) the ``dtype=`` asked for. An op *accepts* a dtype when its
promotion rule and its ``dtypes`` category allow it and the backend supports every
dtype the call would compute or produce in; other dtypes must be refused with a DtypeError.
"""
from __future__ import annotations

import pytest

from ember.dispatch import builtin_ops
from ember.dispatch.schema import REQUIRED

from . import profiles
from .plugin import target_of
from .target import all_dtypes


def accepts(op, dt, supported) -> bool:
    """Whether ``op`` computes on inputs of (or creates) dtype ``dt`` on a backend supporting ``supported``."""
    values = [None if p.default is REQUIRED else p.default for p in op.params]
    for i in op.tensor_positions:  # promotion rules may look at their inputs' dtypes
        values[i] = _Operand(dt)
    takes_tensors = bool(op.tensor_positions)
    if not takes_tensors and "dtype" in op.param_index:
        values[op.param_index["dtype"]] = dt
    try:
        compute, out = op.promote(dt if takes_tensors else None, values)
    except TypeError:  # the rule refuses the dtype (e.g. rand of an integer dtype)
        return False
    if compute is not None and compute not in op.accepted_dtypes:
        return False
    outs = out if isinstance(out, tuple) else (out,)
    return all(d is None or d in supported for d in (compute, dt, *outs))


class _Operand:
    """Stands for a tensor input of dtype ``dt`` when a promotion rule is asked about ``dt`` alone."""

    def __init__(self, dt) -> None:
        self.dtype = self._dtype = dt

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point


def target_dtypes(config) -> tuple:
    """The dtypes the backend supports (every dtype when it is unavailable: its tests then skip)."""
    target = target_of(config)
    return target.dtypes if target.available else all_dtypes()


def sampled_dtypes(config) -> list:
    """The supported dtypes that tests are generated for: all but complex128 on some backends under the quick
    profile (``profiles.sampled_dtypes``)."""
    return profiles.sampled_dtypes(config, target_of(config), target_dtypes(config))


def op_dtype_params(config, *, accepted: bool = True, where=lambda op: True) -> list:
    """``pytest.param(op, dtype, id="add-float32")`` for every op and dtype it accepts (or refuses)."""
    dtypes = target_dtypes(config)
    return [pytest.param(op, dt, id=f"{op.name}-{dt.name}")
            for op in builtin_ops() if where(op)
            for dt in sampled_dtypes(config) if accepts(op, dt, dtypes) == accepted]


def op_params(where=lambda op: True) -> list:
    return [pytest.param(op, id=op.name) for op in builtin_ops() if where(op)]


def dtype_params(config) -> list:
    return [pytest.param(dt, id=dt.name) for dt in sampled_dtypes(config)]
