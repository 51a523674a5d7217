"""Every CPU kernel, by op name: the shared NumPy-compatible kernels built for NumPy."""
from ember.backends.arraykernels import build_kernels

from . import (amp_kernels, bfloat16_casts, bfloat16_kernels, conv_kernels, formula_kernels, lapack_kernels,
               optim_kernels, pool_kernels, row_kernels)
from . import embedding_kernels, foreach_kernels, lbfgs_kernels
from . import recurrent_kernels
from . import topk_kernels
from .library import NUMPY

KERNELS: dict = build_kernels(NUMPY)
# The fused attention pair's shared kernels lose to the op-by-op composite on NumPy in training (forward and
# backward at the benchmark's GPT and transformer shapes: 3.3-3.7 ms against 2.9 ms; NumPy's row max over a short
# last axis and the backward's recomputed weights cost more than the dispatches saved), so a recorded
# scaled_dot_product_attention keeps the composite, with the numba softmax, here. Unrecorded calls (evaluation,
# sampling) take the fused forward: one dispatch instead of about ten (GPT sampling's (1, 3, 32, 16) attention:
# 166 against 242 us; (16, 4, 64, 32): 2.4 against 5.2 ms). cuda runs both (and cuDNN's).
FUSED_ATTENTION_BACKWARD = "_scaled_dot_product_fused_attention_backward"
del KERNELS[FUSED_ATTENTION_BACKWARD]
KERNELS.update(optim_kernels.KERNELS)  # fused optimizer steps (NumPy-specific, kept apart from the shared ones)
KERNELS.update(amp_kernels.KERNELS)  # GradScaler's fused inf check and unscale
KERNELS.update(lbfgs_kernels.KERNELS)  # L-BFGS's two-loop recursion on BLAS dot and axpy
KERNELS.update(foreach_kernels.KERNELS)  # gradient clipping's multi-tensor norms, scaling and clamps
KERNELS.update(embedding_kernels.build())  # the embedding lookup as one take, its backward as one numba pass
KERNELS.update(formula_kernels.build(KERNELS))  # gelu, its gradient and relu's as one numba pass each
KERNELS.update(row_kernels.build(KERNELS))  # layer norm, softmax, cross-entropy (and backward) as numba row loops
KERNELS.update(pool_kernels.build(KERNELS))  # max pooling and its gradient as one numba loop each
KERNELS.update(topk_kernels.build(KERNELS))  # topk of k <= 32 as one numba pass a row (sampling loops)
KERNELS.update(conv_kernels.build(KERNELS))  # conv_transpose2d's col2im as one numba loop
KERNELS.update(lapack_kernels.build(KERNELS))  # LU and triangular solves on SciPy's LAPACK (NumPy has neither)
KERNELS.update(recurrent_kernels.build(NUMPY))  # the fused recurrent layers' gate arithmetic as numba loops
KERNELS.update(bfloat16_casts.build(KERNELS))  # float32 to bfloat16 as one vectorized pass (dtypes.STORAGE_ONLY)
bfloat16_kernels.attach(KERNELS)  # bfloat16 calls that need not widen to float32: one-pass loops, or as stored
