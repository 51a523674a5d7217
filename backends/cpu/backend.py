"""CpuBackend: storage, RNG and memory statistics on NumPy.

Its kernels are the shared NumPy-compatible ones (``ember.backends.arraykernels``, built for NumPy in
``kernels.py``), the same code the CUDA backend runs on CuPy; what is CPU-only stays here: the NumPy
hooks (``library.py``), the Philox generator and the glibc allocator tuning below.
"""
from __future__ import annotations

import numpy as np

from ember.backends import arraykernels
from ember.dispatch import ALL_DTYPES, Backend

from . import fusion
from .dtypes import NUMPY_DTYPE, STORAGE_ONLY
from .kernels import KERNELS
from .rng import CpuGenerator
from .sparse import ScipySparseKernels

SUPPORTED = frozenset(ALL_DTYPES)


class CpuBackend(Backend):
    device_type = "cpu"
    kernels = KERNELS
    accepts_python_scalars = True  # NumPy ufuncs take Python numbers as weak scalars, as PyTorch does
    out_kernels = arraykernels.out_kernels(KERNELS)  # ufuncs writing into out= (in-place calls: one ufunc, no copy)
    writes_into_any = True  # NumPy's ufuncs buffer inputs that overlap out, and write any strides

    def __init__(self) -> None:
        self._default_generator = CpuGenerator(0)
        self._sparse = ScipySparseKernels()

    def default_index(self):
        return None  # one CPU device, spelled "cpu"

    def supported_dtypes(self, index):
        return SUPPORTED  # every dtype, complex64 and complex128 included (NumPy's own)

    def storage_only_dtypes(self, index):
        return STORAGE_ONLY  # bfloat16 computes in float32 (see dtypes.py)

    def from_numpy(self, array, dtype, index):
        target = NUMPY_DTYPE[dtype]
        array = np.asarray(array)
        return array if array.dtype == target else array.astype(target)

    def to_numpy(self, native):
        return native

    def strides(self, native):
        size = native.itemsize
        return tuple(s // size for s in native.strides)

    def storage_id(self, native) -> int:
        base = native
        while getattr(base, "base", None) is not None:  # as_strided views hide their array behind a wrapper
            base = base.base
        return id(base)

    def manual_seed(self, seed: int) -> None:
        self._default_generator.manual_seed(seed)

    def default_generator(self, index):
        return self._default_generator

    def new_generator(self, index):
        return CpuGenerator(np.random.SeedSequence().entropy % (2 ** 63))

    def memory_stats(self, index):
        return {}

    fuses_reductions = True

    def sparse_kernels(self):
        """CSR @ dense through SciPy (``sparse.py``)."""
        return self._sparse

    def fuse_elementwise(self, program, index):
        """One numba loop per program (``fusion.py``), reductions included; None without numba."""
        return fusion.fuse_elementwise(program, index)


def _keep_freed_memory_for_reuse() -> None:
    """Ask glibc to serve large arrays from its heap and keep freed memory around.

    NumPy allocates a fresh buffer for every op result; with glibc's defaults, buffers above 128 KiB
    are mmap'ed and returned to the OS on free, so each training step page-faults its temporaries
    in again. Raising the thresholds lets freed buffers be reused. EMBER_CPU_MALLOC_TUNING=0 opts out.
    """
    import ctypes
    import ctypes.util
    import os
    if os.environ.get("EMBER_CPU_MALLOC_TUNING", "1") == "0":
        return
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 64 * 1024 * 1024)
    mallopt(m_trim_threshold, 256 * 1024 * 1024)


_keep_freed_memory_for_reuse()
