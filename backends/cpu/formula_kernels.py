"""CPU kernels that compute an op's ``scalar`` formula in one numba pass, for ops NumPy needs many passes for.

GELU and its gradient are a dozen NumPy passes each (erf alone is about thirty in ember.dispatch.fast_erf's
float32 form), every pass a trip through memory; ReLU's gradient is three (compare, cast, multiply).
Rendered from the op's own formula as a one-step elementwise program and compiled by the CPU fusion hook
(``fusion.fuse_elementwise``), each is one pass, whose erf and exp take the vectorizable float32 forms.
Measured (float32, min of 7 x 20-50 calls, 2-core VM): at GPT's MLP activations, (64, 32, 192), gelu
1.62 -> 0.22 ms and gelu_backward 2.00 -> 0.44 ms; at 4096 elements 30 -> 6 us and 38 -> 10 us;
threshold_backward 0.20 -> 0.13 ms at the CNN's (64, 16, 28, 28), 61 -> 39 us at (16, 64, 256), even at
(128, 256).

The formula kernel takes calls whose tensors are float32 or float64, all of one shape; anything else (half
types, broadcasting, approximate='tanh', whose tanh the hook declines as slower fused) runs the NumPy kernel.
Without numba the NumPy kernels stay as they are.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember.backends.codegen import one_step_program
from ember.dispatch import OPS

from . import fusion
from .dtypes import EMBER_DTYPE

#: the ops whose CPU kernel is their formula, compiled
FORMULA_OPS = ("gelu", "gelu_backward", "threshold_backward")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def formula_kernel(op_name: str, numpy_kernel: Callable) -> Callable:
    """``op_name``'s kernel: its formula in one compiled pass where it applies, ``numpy_kernel`` otherwise."""
    op = OPS[op_name]
    count = len(op.tensor_positions)
    runners: dict = {}

    def kernel(*args):
        arrays, attrs = args[:count], args[count:]
        first = arrays[0]
        if first.dtype in _FLOATS and all(a.dtype == first.dtype and a.shape == first.shape for a in arrays):
            key = (first.size, first.dtype, attrs)  # by size: every shape of n elements runs the flat loop
            run = runners.get(key, False)
            if run is False:
                run = runners[key] = fusion.fuse_elementwise(
                    one_step_program(op_name, [EMBER_DTYPE[first.dtype]] * count, attrs, (first.size,)))
            if run is not None:
                return run(*(a.reshape(-1) for a in arrays))[0].reshape(first.shape)
        return numpy_kernel(*args)
    kernel.formula, kernel.by_hand = op_name, numpy_kernel
    return kernel


def build(numpy_kernels: dict) -> dict:
    """The formula kernels of ``FORMULA_OPS``, falling back to ``numpy_kernels``' own; {} without numba."""
    if not fusion.numba_available():
        return {}
    return {name: formula_kernel(name, numpy_kernels[name]) for name in FORMULA_OPS}


__all__ = ["FORMULA_OPS", "build", "formula_kernel"]
