"""adam_step (Adam and AdamW) as one elementwise kernel per parameter: the new parameter and both moment
estimates in a single pass, where the composite launches about a dozen kernels and temporaries.

The kernel is Adam's program (``ember.backends.codegen.optim``) rendered in the CUDA dialect by the fusion
renderer: the same operations in the same order as the CPU's and OpenCL's kernels, whose logic CI runs on
PoCL. Half precision computes in float32 and rounds once at the end (double stays double), as PyTorch's fused
optimizers do. The step's scalars are passed as numbers, so one kernel per dtype and weight-decay mode
serves every step; CuPy broadcasts and lays out any parameter shape.
"""
from __future__ import annotations

import numpy as np

from ember.backends.codegen.optim import ADAM_MODES, adam_mode, adam_program, adam_scalar_count, adam_scalar_inputs
from ember.dispatch import float16, float32, float64, value_dtype

from ..fusion import elementwise_source

_DTYPES = {dt.name: dt for dt in (float16, float32, float64)}
#: (dtype name, maximize, weight decay mode) -> the kernel's record
SOURCES_BY_KEY = {(name, maximize, mode): elementwise_source(adam_program(dt, maximize, mode), adam_scalar_count(mode))
                  for name, dt in _DTYPES.items() for maximize in (False, True) for mode in ADAM_MODES}
SOURCES = tuple(SOURCES_BY_KEY.values())


def build(cupy, lib) -> dict:
    kernels: dict = {}

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                  decoupled_weight_decay, maximize):
        mode = adam_mode(weight_decay, decoupled_weight_decay)
        key = (param.dtype.name, bool(maximize), mode)
        kernel = kernels.get(key)
        if kernel is None:
            kernel = kernels[key] = SOURCES_BY_KEY[key].build(cupy)
        scalar = np.dtype(value_dtype(_DTYPES[key[0]]).name).type
        scalars = adam_scalar_inputs(step, lr, beta1, beta2, eps, weight_decay, mode)
        return kernel(param, grad, exp_avg, exp_avg_sq, *(scalar(value) for value in scalars))

    return {"adam_step": adam_step}
