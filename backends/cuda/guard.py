"""Kernels that run on their operands' GPU when there are several.

CuPy launches on the *current* device and refuses arrays that live on another, so with more than one
GPU each kernel first makes its operands' device current. With a single GPU nothing is wrapped, and
the per-call path stays the bare kernel.
"""
from __future__ import annotations

import functools
from typing import Callable


def on_operand_device(cupy, kernels: dict[str, Callable]) -> dict[str, Callable]:
    ndarray, Device = cupy.ndarray, cupy.cuda.Device  # noqa: N806

    def device_of(args):
        for a in args:
            if isinstance(a, ndarray):
                return a.device
            if isinstance(a, (list, tuple)):
                for x in a:
                    if isinstance(x, ndarray):
                        return x.device
        last = args[-1] if args else None  # creation and random kernels end with the device index
        return Device(last) if isinstance(last, int) and not isinstance(last, bool) else None

    def guarded(kernel):
        @functools.wraps(kernel)
        def run(*args):
            device = device_of(args)
            if device is None:
                return kernel(*args)
            with device:
                return kernel(*args)
        return run

    return {name: guarded(kernel) for name, kernel in kernels.items()}
