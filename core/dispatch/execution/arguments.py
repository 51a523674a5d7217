"""The per-argument recipe of a call plan: how each bound value becomes a kernel argument.

Validation decides it once per plan (``dispatcher``), per tensor position; the executor follows it on every
call, and ``ember.compile`` renders the same recipe into its generated code (``core/compiler/program.py``),
so the two cannot drift apart:

- ``DATA``: a tensor already on the device in the compute dtype: its native array;
- ``PASS``: passed as it is (None, or a Python number the backend's elementwise kernel takes);
- :class:`Native`: a tensor moved to the device and/or cast to the compute dtype;
- :class:`Natives`: a list of tensors, each as ``Native``;
- :class:`Number`: a Python number as a 0-d array of the compute dtype on the device.

The plan also fixes the device-index and dtype arguments (``constant_arguments``), and a ``generator=``
argument becomes the backend's native generator (``generator_native``).
"""
from __future__ import annotations

from typing import Any

from ..schema.errors import DeviceError
from .transfer import transfer

DATA = "data"
PASS = "pass"


class Native:
    """A tensor's native array on ``device`` (moved there if it is elsewhere), cast to ``compute`` by the
    backend's ``cast`` kernel if it is of another dtype (``cast`` None: never cast)."""

    __slots__ = ("device", "cast", "compute")

    def __init__(self, device, cast, compute) -> None:
        self.device, self.cast, self.compute = device, cast, compute

    def __call__(self, t) -> Any:
        return self.native(t._data, t._dtype, t._device)

    def native(self, data, dtype, device) -> Any:
        """The argument for a native array of ``dtype`` on ``device`` (what the compiler holds of a tensor)."""
        if device is not self.device:
            data = transfer(data, dtype, device, self.device)
        return data if self.cast is None or dtype is self.compute else self.cast(data, self.compute)


class Natives:
    """A list of tensors (None kept), each as ``Native`` makes it."""

    __slots__ = ("one",)

    def __init__(self, one: Native) -> None:
        self.one = one

    def __call__(self, items) -> list:
        one = self.one
        device, compute = one.device, (one.compute if one.cast is not None else None)
        # the arrays of tensors already in place as they are (cat's, stack's operands), without a call each
        return [t._data if t is not None and t._device is device and (compute is None or t._dtype is compute)
                else None if t is None else one(t) for t in items]


class Number:
    """A Python number as a 0-d array of ``dtype`` on device ``index`` (the backend's ``full`` kernel). A Python
    int beyond int64 becomes its float for a floating dtype (array libraries cannot convert it)."""

    __slots__ = ("full", "dtype", "index")

    def __init__(self, backend, dtype, index) -> None:
        self.full, self.dtype, self.index = backend.kernels["full"], dtype, index

    def __call__(self, value) -> Any:
        if self.dtype.is_floating_point and value.__class__ is int:
            value = float(value)
        return self.full((), value, self.dtype, self.index)


def constant_arguments(plan) -> tuple:
    """Kernel arguments fixed by the plan, as (position, value): the device index and the result dtype."""
    device_at, _, dtype_at = plan.op.special_positions
    constants = []
    if device_at is not None:
        constants.append((device_at, plan.device.index))
    if dtype_at is not None and not isinstance(plan.out, tuple):
        constants.append((dtype_at, plan.out))
    return tuple(constants)


def generator_native(backend, dev, generator):
    """The backend's native generator for a ``generator=`` argument (None: the device's default one)."""
    if generator is None:
        return backend.default_generator(dev.index)
    native = getattr(generator, "_native", None)
    if native is None or generator.device != dev:
        raise DeviceError(f"generator on {getattr(generator, 'device', '?')} cannot draw numbers for {dev}")
    return native


__all__ = ["DATA", "PASS", "Native", "Natives", "Number", "constant_arguments", "generator_native"]
