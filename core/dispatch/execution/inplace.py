"""The entry points of in-place calls: ``x.add_(y)``, ``x.relu_()``, ``x += y`` (Tensor's generated methods).

An in-place call finds the out-of-place op's plan, by the elementwise fast key or the generic one, as
``dispatcher.call`` and ``fastpath`` do, and runs ``plan.into`` (``into.py``): one kernel writing into the
target, where the backend has it. Otherwise, or where ``plan.into`` declines the call, the copy road runs:
the plan's out-of-place result, handed to ``write`` (Tensor's ``write_result``: the dtype and shape checks of
in-place calls, then ``copy_``, which autograd records).

Dispatch modes: a mode sees an in-place call as the op and then ``copy_`` writing its result (what tracers,
autocast and anomaly mode understand and may replace), unless every active mode sets ``sees_inplace_calls``:
then it sees one call of the op, returning the target as it runs (the profiler, which should show the work
as it happens).
"""
from __future__ import annotations

from typing import Callable

from . import links, modes
from .dispatcher import call, passes_as_number, planned
from .fastpath import _GENERIC, _fast_plan, call_or_not_implemented
from .kernel_errors import KERNEL_ERRORS, kernel_error
from .plan import table
from ..schema import OpDef
from ..schema.errors import EmberError
from ..schema.meta import broadcast_shapes

#: ``write(target, result, op_name)``: the copy road's last step (checks, then ``copy_``); returns the target
Write = Callable[..., object]
_active_modes = modes.active
_copies = [0]  # in-place calls that took the copy road (counted there only: the kernel road pays nothing)


def copy_road_count() -> int:
    """How many in-place calls so far ran out of place and copied into their target (the copy road), in
    this process: tests and benchmarks read it to see that in-place calls ran as one kernel."""
    return _copies[0]


def call_inplace(op: OpDef, args: tuple, kwargs: dict, write: Write, operator: bool = False):
    """``args[0].<op>_(*args[1:], **kwargs)``. ``operator``: Python's ``x op= y``, which answers NotImplemented
    where the operand is of a type no tensor combines with (Python then tries ``x op y``)."""
    if _active_modes:
        if all(mode.sees_inplace_calls for mode in _active_modes):
            return modes.dispatch(op, args, kwargs, lambda o, a, k: _below_modes(o, a, k, write, operator))
        result = (call_or_not_implemented if operator else call)(op, args, kwargs)
        if result is NotImplemented:
            return result
        _copies[0] += 1
        return write(args[0], result, op.name)
    return _below_modes(op, args, kwargs, write, operator)


def _below_modes(op: OpDef, args: tuple, kwargs: dict, write: Write, operator: bool):
    if kwargs and "out" in kwargs:  # not an in-place call's keyword: the op's own road says so
        result = call(op, args, kwargs, ())
        _copies[0] += 1
        return write(args[0], result, op.name)
    try:
        plan, values = planned(op, args, kwargs)
    except EmberError:
        raise
    except TypeError:
        if operator:
            return NotImplemented
        raise
    return _run(plan, values, write, op.name)


def _run(plan, values: list, write: Write, name: str):
    """One kernel writing into the target where ``plan.into`` takes the call, else the copy road."""
    try:
        if plan.into is not None:
            done = plan.into(values)
            if done is not None:
                return done
        result = plan.run(values)
    except KERNEL_ERRORS as error:
        raise kernel_error(plan, values, error) from None
    _copies[0] += 1
    return write(values[0], result, name)


def make_inplace(op: OpDef, write: Write, operator: bool = False) -> Callable:
    """The in-place method of ``op`` (``operator``: Python's ``x op= y``), with the elementwise fast key where
    the op has one (``fastpath.simple_elementwise`` ops: one or two operands, default attributes)."""
    from .dispatcher import simple_elementwise
    name = op.name

    def slow(self, *args, **kwargs):
        return call_inplace(op, (self, *args), kwargs, write, operator)
    if not simple_elementwise(op):
        return slow
    lookup = table.get

    def run(plan, values: list):
        return _run(plan, values, write, name)

    if len(op.tensor_positions) == 1:
        def unary(self, *args, **kwargs):
            if not args and not kwargs and not _active_modes and self.__class__ is links.tensor.type:
                grad = self.requires_grad and links.recorder.state.enabled
                key = (op, self._device, self._dtype, grad)
                plan = lookup(key)
                if plan is None:
                    plan = _fast_plan(op, key, self._device, self._dtype, grad)
                if plan is not _GENERIC:
                    return run(plan, [self, *plan.attrs])
            return slow(self, *args, **kwargs)
        return unary

    def binary(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and not _active_modes:
            b = args[0]
            tensor_type = links.tensor.type
            if self.__class__ is tensor_type:
                if b.__class__ is tensor_type:
                    if b._device is self._device and b._dtype is self._dtype:
                        grad = (self.requires_grad or b.requires_grad) and links.recorder.state.enabled
                        key = (op, self._device, self._dtype, grad)
                        plan = lookup(key)
                        if plan is None:
                            plan = _fast_plan(op, key, self._device, self._dtype, grad)
                        if plan is not _GENERIC:
                            if self._data.shape != b._data.shape:
                                broadcast_shapes(name, self._data.shape, b._data.shape)
                            return run(plan, [self, b, *plan.attrs])
                elif passes_as_number(b):
                    grad = self.requires_grad and links.recorder.state.enabled
                    key = (op, self._device, self._dtype, grad, b.__class__)
                    plan = lookup(key)
                    if plan is None:
                        plan = _fast_plan(op, key, self._device, self._dtype, grad, b)
                    if plan is not _GENERIC:
                        return run(plan, [self, b, *plan.attrs])
        return slow(self, *args, **kwargs)
    return binary


__all__ = ["call_inplace", "copy_road_count", "make_inplace"]
