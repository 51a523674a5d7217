"""Kernels that run on their operands' GPU when there are several.

CuPy launches on the *current* device and refuses arrays that live on another, so with more than one
GPU each kernel first makes its operands' device current, switching only when it is not current already
(a program using one GPU of several pays one runtime call per kernel, not a switch and a switch back).
With a single GPU nothing is wrapped, and the per-call path stays the bare kernel.
"""
from __future__ import annotations

import functools
from typing import Callable


def on_operand_device(cupy, kernels: dict[str, Callable]) -> dict[str, Callable]:
    ndarray, Device, current = cupy.ndarray, cupy.cuda.Device, cupy.cuda.runtime.getDevice  # noqa: N806

    def device_of(args) -> int | None:
        for a in args:
            if isinstance(a, ndarray):
                return a.data.device_id
            if isinstance(a, (list, tuple)):
                for x in a:
                    if isinstance(x, ndarray):
                        return x.data.device_id
        last = args[-1] if args else None  # creation and random kernels end with the device index
        return last if isinstance(last, int) and not isinstance(last, bool) else None

    def guarded(kernel):
        @functools.wraps(kernel)
        def run(*args):
            index = device_of(args)
            if index is None or index == current():  # the usual case: one runtime call, no device switch
                return kernel(*args)
            with Device(index):
                return kernel(*args)
        return run

    return {name: guarded(kernel) for name, kernel in kernels.items()}
