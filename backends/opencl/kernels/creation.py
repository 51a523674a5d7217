"""Creation kernels: allocation, fills and ranges computed on the device."""
from __future__ import annotations

import math

import numpy as np

from .. import strided
from ..array import empty
from ..cltypes import NUMPY_DTYPE
from ..runtime import runtime_of


def _full(size, value, dtype, device, *, runtime=None):
    runtime = runtime or runtime_of(device)
    target = NUMPY_DTYPE[dtype]
    return strided.run(runtime, "x0", [strided.Scalar(value, target)], target, shape=tuple(size))


def _arange(start, end, step, dtype, device):
    runtime = runtime_of(device)
    target = NUMPY_DTYPE[dtype]
    count = max(0, math.ceil((end - start) / step))
    out = empty(runtime, (count,), target)
    if target.kind in "iub" and all(isinstance(v, int) for v in (start, end, step)):
        operands = [strided.Scalar(start, np.dtype(np.int64)), strided.Scalar(step, np.dtype(np.int64))]
        return strided.run(runtime, "x0 + g * x1", operands, target, out=out)
    wide = np.dtype(np.float64) if runtime.fp64 else np.dtype(np.float32)
    operands = [strided.Scalar(start, wide), strided.Scalar(step, wide)]
    return strided.run(runtime, "x0 + g * x1", operands, target, out=out)


def _empty(size, dtype, device):
    return empty(runtime_of(device), tuple(size), NUMPY_DTYPE[dtype])


KERNELS = {"full": _full, "arange": _arange, "empty": _empty}
