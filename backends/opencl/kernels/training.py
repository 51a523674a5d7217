"""The fused optimizer step: ``adam_step`` (Adam and AdamW) as one kernel per parameter.

Core's composite takes about a dozen element-wise kernels per parameter and step, each a launch and a pass
over memory; here Adam's program (``ember.backends.codegen.optim``, the one the CPU and CUDA kernels render
too) runs as one fused kernel: each work-item reads its element of the parameter, gradient and both moments
once and writes the three new values. The step's scalars are kernel arguments, so one compiled kernel serves
every step and every parameter of a rank.
"""
from __future__ import annotations

from ember.backends.codegen.optim import adam_mode, adam_program, adam_scalar_count, adam_scalar_inputs

from ..cltypes import EMBER_DTYPE
from ..fusion import fuse_elementwise


def _adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
               decoupled_weight_decay, maximize):
    mode = adam_mode(weight_decay, decoupled_weight_decay)
    program = adam_program(EMBER_DTYPE[param.dtype], maximize, mode, param.shape)
    kernel = fuse_elementwise(program, param.runtime.index, numbers=adam_scalar_count(mode))
    return kernel(param, grad, exp_avg, exp_avg_sq, *adam_scalar_inputs(step, lr, beta1, beta2, eps, weight_decay, mode))


KERNELS = {"adam_step": _adam_step}
