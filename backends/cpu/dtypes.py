"""Ember dtypes as NumPy dtypes; bfloat16 comes from ml_dtypes."""
import ml_dtypes
import numpy as np

from ember.dispatch import dtypes as d

NUMPY_DTYPE = {
    d.bool_: np.dtype(np.bool_), d.uint8: np.dtype(np.uint8), d.int8: np.dtype(np.int8),
    d.int16: np.dtype(np.int16), d.int32: np.dtype(np.int32), d.int64: np.dtype(np.int64),
    d.float16: np.dtype(np.float16), d.bfloat16: np.dtype(ml_dtypes.bfloat16),
    d.float32: np.dtype(np.float32), d.float64: np.dtype(np.float64),
    d.complex64: np.dtype(np.complex64), d.complex128: np.dtype(np.complex128),
}
EMBER_DTYPE = {v: k for k, v in NUMPY_DTYPE.items()}
LOW_PRECISION = frozenset({NUMPY_DTYPE[d.float16], NUMPY_DTYPE[d.bfloat16]})
#: Dtypes the CPU stores but computes in float32 (``Backend.storage_only_dtypes``): NumPy has no bfloat16 loops,
#: and ml_dtypes' convert each element on its own (mul, relu, max pooling's backward: 5-10x float32's time),
#: so a kernel call reading or making bfloat16 widens it, runs the float32 kernel (BLAS, the numba loops) and
#: rounds once, which is PyTorch's float32 opmath. The rounding is ``bfloat16_casts``' vectorized loop; kernels
#: that read bfloat16 themselves skip the widening (``bfloat16_kernels``).
STORAGE_ONLY = frozenset({d.bfloat16})
