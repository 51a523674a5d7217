"""CudaBackend: devices ``cuda:N`` on CuPy, its memory pool and streams, device-side random numbers.

Nothing here imports CuPy until the backend is first asked whether it can run; then the probe result,
the kernel table and the per-device state are set up once. Work runs on CuPy's current stream of each
device (the legacy default stream unless the caller picks another with ``ember.cuda.stream`` or CuPy's
stream context), so Ember calls interleave correctly with the caller's own CuPy code.
"""
from __future__ import annotations

import numpy as np

from ember.dispatch import Backend, DeviceError, bfloat16

from . import fusion, probe
from .timer import CudaTimer


class CudaBackend(Backend):
    device_type = "cuda"
    kernels: dict = {}  # replaced by the real table once the backend is found available
    accepts_python_scalars = True  # CuPy's ufuncs give a Python number the array's dtype
    defers_value_checks = True  # index checks wait for the stream's next sync (docs/backends.md)

    def __init__(self) -> None:
        self._probed = False
        self._reason: str | None = None
        self._cupy = None
        self._count = 0
        self._current = 0
        self._generators: dict[int, object] = {}
        self._memories: dict[int, object] = {}  # index -> CupyMemory, made on first use

    # -- capabilities ----------------------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._probed = True
            self._reason = self._start()
        return self._reason

    def _start(self) -> str | None:
        cupy, count, reason = probe.probe()
        if reason is not None:
            return reason
        try:
            from .kernels import build
            from .library import cupy_library
            from .matmul_precision import follow_matmul_precision
            from .memory import PeakTracker, Uploader
            from .runtime import CudaRuntime
            self._lib = cupy_library(cupy)
            self.kernels = build(cupy, self._lib, count)
            # the shared kernels that write into out= (in-place calls as one launch); with several GPUs the kernels
            # are wrapped to run on their operands' device and left out (the copy road); CuPy does not buffer
            # overlapping operands, so Backend.writes_into vets each call (writes_into_any stays False)
            from ember.backends.arraykernels import out_kernels
            self.out_kernels = out_kernels(self.kernels)
            self._memory = PeakTracker(cupy)
            self._uploader = Uploader(cupy)
            self._runtime = CudaRuntime(cupy)
            follow_matmul_precision(cupy)
        except Exception as exc:  # a CuPy too old for an API the kernels use, a broken cupyx
            return f"CuPy {getattr(cupy, '__version__', '?')} loaded, but Ember's CUDA kernels could not be set up " \
                   f"({type(exc).__name__}: {exc})"
        self._cupy, self._count = cupy, count
        self._current = cupy.cuda.runtime.getDevice()
        return None

    def device_count(self) -> int:
        return self._count if self.unavailable_reason() is None else 0

    def default_index(self) -> int:
        """The current device, which ``ember.cuda.set_device`` changes: what a bare ``"cuda"`` means."""
        return self._current

    def set_default_index(self, index: int) -> None:
        if not 0 <= index < self.device_count():
            raise DeviceError(f"cuda:{index} does not exist: cuda has {self.device_count()} device(s)")
        self._current = index
        self._cupy.cuda.Device(index).use()

    def supported_dtypes(self, index):
        """Every dtype CuPy holds: bfloat16 where a probe finds that CuPy can store and convert it."""
        return frozenset(self._lib.dtypes) if self.unavailable_reason() is None else frozenset()

    def storage_only_dtypes(self, index):
        """bfloat16: CuPy 14 stores it but has bfloat16 loops for only some ufuncs (none for ``where``, sorts or
        scatter-add, and a Python float beside it picks float32), so its kernel calls compute in float32."""
        return frozenset({bfloat16}) & self.supported_dtypes(index)

    # -- storage ---------------------------------------------------------------------------------
    def from_numpy(self, array, dtype, index):
        target = self._lib.dtypes.get(dtype)
        if target is None:  # reached only by direct calls: the dispatcher checks dtypes first
            raise DeviceError(f"cuda:{index} does not support {dtype.name} (CuPy has no {dtype.name} type)")
        host = np.asarray(array)
        if host.dtype != target:
            host = host.astype(target)
        return self._uploader.upload(host, self.device_memory(index))

    def to_numpy(self, native):
        return native.get()  # waits for the copy on the current stream

    def strides(self, native):
        size = native.itemsize
        return tuple(s // size for s in native.strides)

    def storage_id(self, native) -> int:
        return id(native.data.mem)  # every view of one allocation shares its memory object

    def from_dlpack(self, producer, copy=None):
        """The optional DLPack import hook (``ember.from_dlpack``): a CuPy array sharing ``producer``'s device
        memory. CuPy hands the producer its current stream, as DLPack asks of a consumer."""
        if copy is None:
            return self._cupy.from_dlpack(producer)
        return self._cupy.from_dlpack(producer, copy=copy)

    def to_index(self, native, index):
        """A copy on device ``index``, ordered after the source device's queued work (which may still be
        writing ``native``); ``native`` is kept from its pool until the copy has read it."""
        index = self._index(index)
        source = native.device.id
        if source == index:
            return native
        cuda = self._cupy.cuda
        with cuda.Device(source):
            written = cuda.get_current_stream().record()
        with cuda.Device(index):
            stream = cuda.get_current_stream()
            stream.wait_event(written)
            # cupy.array copies (a peer copy where the GPUs allow it)
            out = self.device_memory(index).retrying(self._cupy.array, native, nbytes=native.nbytes)
        self._runtime.keep_until_done(index, native, stream)
        return out

    # -- execution -------------------------------------------------------------------------------
    def _index(self, index) -> int:
        return self._current if index is None else index

    def manual_seed(self, seed: int) -> None:
        for index in range(self.device_count()):
            self.default_generator(index).manual_seed(seed)

    def default_generator(self, index):
        index = self._index(index)
        generator = self._generators.get(index)
        if generator is None:
            from .rng import CudaGenerator
            generator = self._generators[index] = CudaGenerator(self._cupy, index, 0)
        return generator

    def new_generator(self, index):
        from .rng import CudaGenerator
        return CudaGenerator(self._cupy, self._index(index), np.random.SeedSequence().entropy % (2 ** 63))

    def synchronize(self, index) -> None:
        for i in (range(self.device_count()) if index is None else (index,)):
            self._cupy.cuda.Device(i).synchronize()
        self._runtime.lent.release_done()

    def device_runtime(self):
        """CuPy's streams and events, record_stream, device properties and NVTX (``runtime.py``)."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise DeviceError(f"cuda: unavailable: {reason}")
        return self._runtime

    def sparse_kernels(self):
        """CSR @ dense through cupyx.scipy.sparse (``sparse.py``); None where CUDA is unavailable."""
        if self.unavailable_reason() is not None:
            return None
        from .sparse import CupySparseKernels
        return CupySparseKernels(self._cupy)

    def device_timer(self, index):
        return CudaTimer(self._cupy, self._index(index)) if self.unavailable_reason() is None else None

    def fuse_elementwise(self, program, index):
        """One ``cupy.ElementwiseKernel`` per program (``fusion.py``); None where CUDA cannot run here."""
        if self.unavailable_reason() is not None:
            return None
        return fusion.fuse_elementwise(self._cupy, program, self._index(index))

    def memory_stats(self, index) -> dict[str, int]:
        return self._memory.stats(self._index(index))

    def reset_peak_memory_stats(self, index) -> None:
        self._memory.reset_peak(self._index(index))

    def empty_cache(self, index) -> None:
        self.device_memory(index).free_cache()

    def device_memory(self, index):
        """``cuda:index``'s allocations (``memory.CupyMemory``), with the retry and ``OutOfMemoryError`` every
        bundled backend shares."""
        index = self._index(index)
        memory = self._memories.get(index)
        if memory is None:
            from .memory import CupyMemory
            memory = self._memories[index] = CupyMemory(self._cupy, index)
        return memory

    def out_of_memory(self, error, index):
        """The optional kernel-error hook: CuPy's OutOfMemoryError from inside a kernel (its pool has freed its
        blocks and retried already) as ``OutOfMemoryError`` with the device's figures; None for other errors."""
        memory = self.device_memory(index)
        return memory.explain(error, memory.bytes_asked(error))
