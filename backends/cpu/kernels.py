"""Every CPU kernel, by op name: the shared NumPy-compatible kernels built for NumPy."""
from ember.backends.arraykernels import build_kernels

from . import amp_kernels, conv_kernels, formula_kernels, lapack_kernels, optim_kernels, pool_kernels, row_kernels
from .library import NUMPY

KERNELS: dict = build_kernels(NUMPY)
# The fused attention pair's shared kernels lose to the op-by-op composite on NumPy (forward and backward at the
# benchmark's GPT and transformer shapes: 3.3-3.7 ms against 2.9 ms; NumPy's row max over a short last axis and
# the backward's recomputed weights cost more than the dispatches saved), so scaled_dot_product_attention keeps
# the composite, with the numba softmax, here. cuda runs them (and cuDNN's).
FUSED_ATTENTION = ("_scaled_dot_product_fused_attention", "_scaled_dot_product_fused_attention_backward")
for _name in FUSED_ATTENTION:
    del KERNELS[_name]
KERNELS.update(optim_kernels.KERNELS)  # fused optimizer steps (NumPy-specific, kept apart from the shared ones)
KERNELS.update(amp_kernels.KERNELS)  # GradScaler's fused inf check and unscale
KERNELS.update(formula_kernels.build(KERNELS))  # gelu, its gradient and relu's as one numba pass each
KERNELS.update(row_kernels.build(KERNELS))  # layer norm, softmax, cross-entropy (and backward) as numba row loops
KERNELS.update(pool_kernels.build(KERNELS))  # max pooling and its gradient as one numba loop each
KERNELS.update(conv_kernels.build(KERNELS))  # conv_transpose2d's col2im as one numba loop
KERNELS.update(lapack_kernels.build(KERNELS))  # LU and triangular solves on SciPy's LAPACK (NumPy has neither)
