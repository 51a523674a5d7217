"""OpenCLBackend: devices, capabilities, host transfers, generators and memory statistics."""
from __future__ import annotations

import numpy as np

from ember.dispatch import ALL_DTYPES, Backend, bfloat16, c_contiguous, complex128, float16, float64

from . import fusion
from .array import CLArray
from .cltypes import EMBER_DTYPE, NUMPY_DTYPE
from .kernels import KERNELS, elementwise
from .kernels.random import PhiloxGenerator
from .kernels.shapes import clone
from .memory import OpenCLMemory
from .runtime import DEVICES, runtime_of
from .sparse import OpenCLSparseKernels
from .timer import OpenCLTimer


_SPARSE_KERNELS = OpenCLSparseKernels()


class OpenCLBackend(Backend):
    device_type = "opencl"
    kernels = KERNELS
    accepts_python_scalars = True  # elementwise kernels take a number as an argument, in the tensor's dtype
    out_kernels = elementwise.out_kernels(KERNELS)  # in-place calls as one strided kernel (see writes_into)
    defers_value_checks = True  # index checks wait for the next sync (docs/backends.md)

    def unavailable_reason(self) -> str | None:
        DEVICES.found()
        return DEVICES.error

    def device_count(self) -> int:
        return len(DEVICES.found())

    def supported_dtypes(self, index):
        runtime = runtime_of(index)
        missing = {bfloat16}
        if not runtime.fp64:  # (complex128 is a pair of doubles)
            missing |= {float64, complex128}
        if not runtime.fp16:
            missing.add(float16)
        return frozenset(d for d in ALL_DTYPES if d not in missing)

    def describe(self, index) -> str:
        return runtime_of(index).describe()

    # -- storage ---------------------------------------------------------------------------------
    def from_numpy(self, array, dtype, index):
        runtime = runtime_of(index)
        host = c_contiguous(array, NUMPY_DTYPE[dtype])
        return CLArray(runtime, runtime.write(host), host.shape, host.dtype)

    def to_numpy(self, native: CLArray):
        if not native.is_contiguous():
            native = clone(native)
        return native.runtime.read(native)

    def strides(self, native: CLArray):
        return native.strides

    def storage_id(self, native: CLArray) -> int:
        return native.buffer.int_ptr

    def to_index(self, native: CLArray, index):
        runtime = runtime_of(index)
        if native.runtime is runtime:
            return native
        return self.from_numpy(self.to_numpy(native), _ember_dtype(native.dtype), index)

    # -- execution -------------------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        PhiloxGenerator.seed_defaults(seed)

    def default_generator(self, index):
        return PhiloxGenerator.default(runtime_of(index))

    def new_generator(self, index):
        return PhiloxGenerator(runtime_of(index), int(np.random.SeedSequence().entropy % (2 ** 63)))

    def synchronize(self, index) -> None:
        for runtime in DEVICES.started():
            if index is None or runtime.index == index:
                runtime.synchronize()

    def device_timer(self, index):
        return OpenCLTimer(runtime_of(index))

    def sparse_kernels(self):
        """CSR @ dense in OpenCL C (``sparse.py``, ``kernels/sparse.py``)."""
        return _SPARSE_KERNELS

    def fuse_elementwise(self, program, index):
        """One generated OpenCL C kernel per program (``fusion.py``); None for dtypes the device lacks."""
        return fusion.fuse_elementwise(program, index)

    def device_memory(self, index) -> OpenCLMemory:
        """The device's allocations, with the retry and ``OutOfMemoryError`` every bundled backend shares."""
        return runtime_of(index).memory

    def empty_cache(self, index) -> None:
        for runtime in DEVICES.started():
            if index is None or runtime.index == index:
                runtime.memory.free_cache()

    def memory_stats(self, index):
        runtime = runtime_of(index)
        return {"allocated_bytes": runtime.pool.active_bytes, "peak_bytes": runtime.peak_bytes,
                "reserved_bytes": runtime.pool.managed_bytes, "compiled_kernels": runtime.programs.compiled,
                "compile_seconds_x1000": int(runtime.programs.compile_seconds * 1000)}


def _ember_dtype(dtype: np.dtype):
    return EMBER_DTYPE[dtype]
