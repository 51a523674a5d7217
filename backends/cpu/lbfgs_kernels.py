"""L-BFGS's two-loop recursion on the CPU: the kernel of ``_lbfgs_direction``.

The composite dispatches a dot and an axpy per stored pair and loop (400 small ops with PyTorch's default
history of 100); here each is one BLAS call on the pair's own array, updating one work vector in place
(``ddot``/``daxpy``: about 1 us each on small vectors, and no temporaries on large ones). Half precision
works in float32 and is rounded once. Self-contained: the backend adds ``KERNELS`` to its table.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas

from .dtypes import LOW_PRECISION


def _lbfgs_direction(flat_grad: np.ndarray, old_dirs: list, old_stps: list, ro: tuple, H_diag: float) -> np.ndarray:
    work = np.dtype(np.float32) if flat_grad.dtype in LOW_PRECISION else flat_grad.dtype
    dot, axpy = blas.get_blas_funcs(("dot", "axpy"), dtype=work)
    if work == flat_grad.dtype:  # the routines read strided vectors as they are
        dirs, stps = old_dirs, old_stps
    else:
        dirs, stps = [y.astype(work) for y in old_dirs], [s.astype(work) for s in old_stps]
    q = np.negative(flat_grad, dtype=work)
    alphas = [0.0] * len(dirs)
    for i in range(len(dirs) - 1, -1, -1):
        alphas[i] = dot(stps[i], q) * ro[i]
        q = axpy(dirs[i], q, a=-alphas[i])  # in place: q is a contiguous array of the routine's type
    r = np.multiply(q, work.type(H_diag), out=q)
    for i in range(len(dirs)):
        beta = dot(dirs[i], r) * ro[i]
        r = axpy(stps[i], r, a=alphas[i] - beta)
    return r if work == flat_grad.dtype else r.astype(flat_grad.dtype)


KERNELS = {"_lbfgs_direction": _lbfgs_direction}
