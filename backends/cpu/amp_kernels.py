"""GradScaler's inf check for NumPy: the CPU kernel of ``_amp_foreach_non_finite_check_and_unscale``.

The composite costs about six dispatched ops per gradient; here one call walks every gradient of the
device once: check for inf/nan (stopping the checks at the first one found), multiply by inv_scale. Half
precision multiplies in float32 and is rounded once, as PyTorch's kernel does. Self-contained: the backend
adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import numpy as np

from .dtypes import LOW_PRECISION


def _unscaled(grad: np.ndarray, inv_scale: np.ndarray) -> np.ndarray:
    compute = np.dtype(np.float32) if grad.dtype in LOW_PRECISION else grad.dtype
    out = np.multiply(grad.astype(compute, copy=False), inv_scale.astype(compute),
                      out=np.empty(grad.shape, compute))  # out= keeps a 0-d result an array
    return out if compute == grad.dtype else out.astype(grad.dtype)


def _non_finite_check_and_unscale(grads: list, inv_scale: np.ndarray) -> tuple:
    inv_scale = inv_scale.reshape(())
    found_inf = False
    for grad in grads:
        found_inf = found_inf or not np.isfinite(grad).all()
    return (*(_unscaled(g, inv_scale) for g in grads), np.array(found_inf, np.float32))


KERNELS = {"_amp_foreach_non_finite_check_and_unscale": _non_finite_check_and_unscale}
