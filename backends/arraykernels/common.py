"""Helpers several kernel modules share: half-precision widening, batching, padding by growth."""
from __future__ import annotations

import functools

import numpy as np

from .library import ArrayLib


def in_float32(lib: ArrayLib):
    """A decorator: run a kernel on float32 copies of low-precision arrays and round its result back; NumPy
    scalars (what ufuncs give for 0-d input) become 0-d arrays. inf - inf and 0 * inf give NaN as in
    PyTorch, without the library's warnings."""
    xp, low, quiet = lib.xp, lib.low_precision, lib.quiet
    ndarray = xp.ndarray

    def decorate(kernel):
        @functools.wraps(kernel)
        def wrapper(a, *args):
            with quiet():
                if a.dtype not in low:
                    return xp.asarray(kernel(a, *args))
                narrow = a.dtype
                args = [x.astype(np.float32) if isinstance(x, ndarray) else x for x in args]
                return xp.asarray(kernel(a.astype(np.float32), *args)).astype(narrow)
        return wrapper
    return decorate


def batched(a, spatial: int):
    """(a with a batch dim, whether it had one)."""
    return (a, True) if a.ndim == spatial + 2 else (a[None], False)


def grower(lib: ArrayLib):
    """``grow(a, widths, mode, value=None)``: a with (before, after) elements added per axis, in one new array.

    The input is copied into the middle, then each axis' borders are filled from what is already
    there (corners come out right because every axis copies whole slabs, borders of the axes before
    it included).
    """
    xp = lib.xp

    def grow(a, widths, mode, value=None):
        shape = tuple(n + b + e for n, (b, e) in zip(a.shape, widths))
        if mode == "constant":
            out = xp.full(shape, 0 if value is None else value, a.dtype)
        else:
            out = xp.empty(shape, a.dtype)
        out[tuple(slice(b, b + n) for n, (b, _) in zip(a.shape, widths))] = a
        if mode == "constant":
            return out
        for axis, ((before, after), n) in enumerate(zip(widths, a.shape)):
            def along(start, stop, step=1):
                return (slice(None),) * axis + (slice(start, stop if stop is None or stop >= 0 else None, step),)
            end = before + n  # one past the input's last element along this axis
            if mode == "reflect":  # mirrored around the first and last element, which are not repeated
                out[along(0, before)] = out[along(2 * before, before, -1)]
                out[along(end, end + after)] = out[along(end - 2, end - 2 - after, -1)]
            elif mode == "replicate":
                out[along(0, before)] = out[along(before, before + 1)]
                out[along(end, end + after)] = out[along(end - 1, end)]
            else:  # circular
                out[along(0, before)] = out[along(n, n + before)]
                out[along(end, end + after)] = out[along(before, before + after)]
        return out
    return grow
