"""CLArray: the OpenCL backend's native array, a strided window onto a device buffer.

Views (slice, permute, expand, view, unfold) are new CLArrays over the same buffer with
their own shape, strides and offset (all in elements), exactly as NumPy arrays share memory.
"""
from __future__ import annotations

import math

import numpy as np


def contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


class CLArray:
    __slots__ = ("runtime", "buffer", "shape", "strides", "offset", "dtype", "__weakref__")

    def __init__(self, runtime, buffer, shape: tuple, dtype: np.dtype, strides: tuple | None = None,
                 offset: int = 0) -> None:
        self.runtime = runtime
        self.buffer = buffer
        self.shape = tuple(shape)
        self.dtype = dtype
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.offset = offset

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def is_contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def view_as(self, shape: tuple, strides: tuple, offset: int | None = None) -> "CLArray":
        return CLArray(self.runtime, self.buffer, shape, self.dtype, strides,
                       self.offset if offset is None else offset)

    def __repr__(self) -> str:
        return (f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, offset={self.offset}, "
                f"device={self.runtime.name!r})")


def empty(runtime, shape: tuple, dtype: np.dtype) -> CLArray:
    return CLArray(runtime, runtime.allocate(math.prod(shape) * dtype.itemsize), shape, dtype)
