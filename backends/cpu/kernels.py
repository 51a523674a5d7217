"""Every CPU kernel, by op name: the shared NumPy-compatible kernels built for NumPy."""
from ember.backends.arraykernels import build_kernels

from . import amp_kernels, lapack_kernels, optim_kernels, row_kernels
from .library import NUMPY

KERNELS: dict = build_kernels(NUMPY)
KERNELS.update(optim_kernels.KERNELS)  # fused optimizer steps (NumPy-specific, kept apart from the shared ones)
KERNELS.update(amp_kernels.KERNELS)  # GradScaler's fused inf check and unscale
KERNELS.update(row_kernels.build(KERNELS))  # layer_norm as one numba loop over rows, where numba is installed
KERNELS.update(lapack_kernels.build(KERNELS))  # LU and triangular solves on SciPy's LAPACK (NumPy has neither)
