"""OpenCL devices as Ember sees them: enumeration, and per device a context, queue, memory pool and
compiled-program cache. Every allocation, upload and kernel launch goes through a device's ``memory``
(``memory.py``), which turns running out of memory into ``OutOfMemoryError`` after one retry.

Device numbering (``opencl:N``): platforms in the order the ICD loader lists them, and within a
platform its devices in the order the platform lists them. A device whose compiler cannot build a
trivial kernel (e.g. a PoCL whose LLVM does not know the host CPU) is left out, and the reason is
kept for ``ember.backends.available()``; ``EMBER_OPENCL_DEVICES=0,2`` keeps only those positions of
the working list.
"""
from __future__ import annotations

import atexit
import os
import time

import numpy as np

from ember.dispatch import BackendError

from .memory import OpenCLMemory

_PROBE = "__kernel void ember_probe(__global int *out) { out[get_global_id(0)] = 1; }"
_LOCAL_SIZE = 256
# Kernels write their range check as EMBER_GUARD(i, n). A launch whose work-items all lie in range (the
# global size equals the item count) runs a twin built with EMBER_EXACT_RANGE, where the check is gone:
# on CPU devices (PoCL) the check turns the vectorized work-group loop into masked loads and stores,
# 3-5x slower; on GPUs it costs little, and the twin is as fast.
_GUARD = """
#ifdef EMBER_EXACT_RANGE
#define EMBER_GUARD(i, n)
#else
#define EMBER_GUARD(i, n) if ((i) >= (n)) return;
#endif
"""
_EXACT = "-D EMBER_EXACT_RANGE"


class ProgramCache:
    """Compiled kernels by source text, so that no kernel is compiled twice in a process."""

    def __init__(self, context, preamble: str) -> None:
        self.context = context
        self.preamble = preamble
        self.kernels: dict[tuple[str, str, str], object] = {}  # (source, name, build options) -> kernel
        self._exact: dict[object, object] = {}  # kernel -> its twin without EMBER_GUARD checks
        self._recipes: dict[object, tuple] = {}  # kernel -> (source, name, scalar dtypes) it was built from
        self.compiled = 0
        self.compile_seconds = 0.0

    def kernel(self, source: str, name: str, scalar_dtypes: list | None = None, options: str = ""):
        key = (source, name, options)
        kernel = self.kernels.get(key)
        if kernel is None:
            import pyopencl as cl
            started = time.perf_counter()
            program = cl.Program(self.context, self.preamble + source).build(options=options)
            try:
                kernel = getattr(program, name)
            except (AttributeError, cl.Error) as exc:  # "built" without the kernel: a compiler fault
                log = " ".join(str(program.get_build_info(self.context.devices[0],
                                                          cl.program_build_info.LOG)).split())
                raise BackendError(f"opencl: the device compiler built no kernel {name} ({exc}); "
                                   f"compiler log: {log[:500] or 'empty'}") from exc
            if scalar_dtypes is not None:
                kernel.set_scalar_arg_dtypes(scalar_dtypes)
            self.compile_seconds += time.perf_counter() - started
            self.compiled += 1
            self.kernels[key] = kernel
            self._recipes[kernel] = (source, name, scalar_dtypes)
        return kernel

    def exact(self, kernel):
        """``kernel``'s twin for launches with no work-item out of range (itself if it has no guard)."""
        twin = self._exact.get(kernel)
        if twin is None:
            source, name, scalar_dtypes = self._recipes.get(kernel, ("", None, None))
            twin = self.kernel(source, name, scalar_dtypes, _EXACT) if "EMBER_GUARD" in source else kernel
            self._exact[kernel] = twin
        return twin


class DeviceRuntime:
    """Everything one OpenCL device needs: context, in-order queue, memory pool, programs."""

    def __init__(self, index: int, device) -> None:
        import pyopencl as cl
        import pyopencl.tools as cl_tools
        self.index = index
        self.device = device
        self.name = f"opencl:{index}"
        self.context = cl.Context([device])
        # profiling events give ember.profiler the device's own times (no cost measurable above noise on PoCL)
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        # the immediate allocator makes the device back each buffer as it is made, so that running out of memory
        # shows at allocation, where the pool can free its held blocks and retry, not at some later launch
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        self.memory = OpenCLMemory(self.name, device, self.pool)
        extensions = device.extensions.split()
        self.fp64 = "cl_khr_fp64" in extensions or bool(getattr(device, "double_fp_config", 0))
        self.fp16 = "cl_khr_fp16" in extensions
        self.max_group = min(device.max_work_group_size, _LOCAL_SIZE)
        self.local_bytes = device.local_mem_size
        self.is_cpu = bool(device.type & cl.device_type.CPU)
        # the smallest work-group an exact launch uses: a few SIMD widths on a CPU, two warps/wavefronts on a
        # GPU; sizes no such group divides are launched rounded up (the range check then costs little)
        self.min_exact_group = 16 if self.is_cpu else 64
        # the work-group sizes launches choose from, largest first. PoCL compiles a kernel once per size (about
        # 0.25 s each: three quarters of a cold conformance run went to compiling); on a CPU device a size makes
        # no difference to speed worth that, so launches there take two sizes: every power of two on a GPU
        self.group_sizes = ((self.max_group, self.min_exact_group) if self.is_cpu else
                            tuple(1 << b for b in range(self.max_group.bit_length() - 1, -1, -1)))
        self._exact_groups: dict[int, int] = {}  # items -> work-group size of an exact launch, or 0
        pragmas = []
        if self.fp64:
            pragmas.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        if self.fp16:
            pragmas.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
        self.programs = ProgramCache(self.context, "\n".join(pragmas) + _GUARD)
        self.peak_bytes = 0

    def describe(self) -> str:
        return f"{self.device.name.strip()} ({self.device.platform.name.strip()}, {self.device.version.strip()})"

    def allocate(self, nbytes: int):
        """A pooled buffer of at least one byte (OpenCL has no empty buffers); OutOfMemoryError where the
        device cannot hold it even after the pool's held blocks are freed."""
        buffer = self.memory.obtain(max(int(nbytes), 8))
        active = self.pool.active_bytes
        if active > self.peak_bytes:
            self.peak_bytes = active
        return buffer

    def write(self, host: np.ndarray):
        """A new buffer holding the bytes of ``host`` (a C-contiguous NumPy array); waits for the copy."""
        import pyopencl as cl
        buffer = self.allocate(host.nbytes)
        if host.size:
            self.memory.retrying(lambda: cl.enqueue_copy(self.queue, buffer, host, is_blocking=True),
                                 nbytes=host.nbytes)
        return buffer

    def enqueue(self, kernel, global_size: tuple, local_size: tuple | None, *args):
        """Enqueue ``kernel``, run again once after freeing the pool's held blocks where the device refuses the
        launch for memory (CL_OUT_OF_RESOURCES, CL_MEM_OBJECT_ALLOCATION_FAILURE), else OutOfMemoryError.
        Every launch goes through here."""
        return self.memory.retrying(kernel, self.queue, global_size, local_size, *args,
                                    action="A kernel launch failed")

    def launch(self, kernel, items: int, *args, local: int | None = None) -> None:
        """Enqueue ``kernel`` over ``items`` work-items; no wait. Where a work-group size in the device's
        range divides ``items`` the launch is exact (the kernel's EMBER_GUARD-free twin), else it is
        rounded up to whole work-groups of ``local`` work-items (default: see ``covering_group``)."""
        if items <= 0:
            return
        if local is None:
            group = self._exact_group(items)
            if group:
                self.enqueue(self.programs.exact(kernel), (items,), (group,), *args)
                return
        group = local or self.covering_group(items)
        total = -(-items // group) * group
        self.enqueue(kernel, (total,), (group,), *args)

    def launch_rows(self, kernel, inner: int, rows: int, *args) -> None:
        """Enqueue ``kernel`` over a 2-d range: ``inner`` work-items along axis 0 (exact where a group size
        divides it, as in ``launch``) times ``rows`` along axis 1, in work-groups of one row."""
        if inner <= 0 or rows <= 0:
            return
        group = self._exact_group(inner)
        if group:
            self.enqueue(self.programs.exact(kernel), (inner, rows), (group, 1), *args)
        else:
            group = self.covering_group(inner)
            self.enqueue(kernel, (-(-inner // group) * group, rows), (group, 1), *args)

    def _exact_group(self, items: int) -> int:
        """The work-group size of an exact launch of ``items``: the largest of ``group_sizes`` from
        ``min_exact_group`` up dividing them, or 0."""
        group = self._exact_groups.get(items)
        if group is None:
            group = self._exact_groups[items] = next(
                (g for g in self.group_sizes if g >= self.min_exact_group and items % g == 0), 0)
        return group

    def covering_group(self, items: int) -> int:
        """The work-group size of a rounded-up launch, or of a reduction over ``items`` per work-group: the
        smallest of ``group_sizes`` covering ``items``, or ``max_group``."""
        return min((g for g in self.group_sizes if g >= items), default=self.max_group)

    def launch_groups(self, kernel, groups: int, group: int, *args) -> None:
        """Enqueue ``groups`` work-groups of ``group`` work-items each (one group per output)."""
        if groups <= 0:
            return
        self.enqueue(kernel, (groups * group,), (group,), *args)

    def synchronize(self) -> None:
        self.queue.finish()

    def read(self, a) -> np.ndarray:
        """The contents of a contiguous CLArray as a new NumPy array (waits for queued work)."""
        import pyopencl as cl
        host = np.empty(a.shape, a.dtype)
        if host.size:
            cl.enqueue_copy(self.queue, host, a.buffer, src_offset=a.offset * a.itemsize, is_blocking=True)
        return host

    def read_scalar(self, a):
        return self.read(a.view_as((), ())).item()


def _probe(device) -> str | None:
    """None when the device builds and runs a trivial kernel, else why not."""
    import pyopencl as cl
    try:
        context = cl.Context([device])
        queue = cl.CommandQueue(context)
        kernel = cl.Program(context, _PROBE).build().ember_probe
        out = np.zeros(1, np.int32)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4)
        kernel(queue, (1,), None, buffer)
        cl.enqueue_copy(queue, out, buffer)
        queue.finish()
        if out[0] != 1:
            return "a probe kernel ran but wrote the wrong value"
    except Exception as exc:
        message = " ".join(str(exc).split())
        return f"cannot build a probe kernel ({type(exc).__name__}: {message[:200]})"
    return None


class Devices:
    """The working OpenCL devices (found once) and why any others were left out."""

    def __init__(self) -> None:
        self._found: list | None = None
        self.rejected: list[str] = []
        self.error: str | None = None
        self._runtimes: dict[int, DeviceRuntime] = {}

    def found(self) -> list:
        if self._found is None:
            self._found = self._enumerate()
        return self._found

    def _enumerate(self) -> list:
        try:
            import pyopencl as cl
        except Exception as exc:
            self.error = f"PyOpenCL is not importable ({type(exc).__name__}: {exc}); install ember[opencl]"
            return []
        try:
            platforms = cl.get_platforms()
        except Exception as exc:
            self.error = f"no OpenCL platform ({type(exc).__name__}: {' '.join(str(exc).split())})"
            return []
        working = []
        for platform in platforms:
            try:
                devices = platform.get_devices()
            except Exception as exc:
                self.rejected.append(f"{platform.name.strip()}: cannot list devices ({exc})")
                continue
            for device in devices:
                problem = _probe(device)
                if problem is None:
                    working.append(device)
                else:
                    self.rejected.append(f"{device.name.strip()} on {platform.name.strip()} "
                                         f"{platform.version.strip()}: {problem}")
        chosen = os.environ.get("EMBER_OPENCL_DEVICES")
        if chosen:
            working = [working[int(i)] for i in chosen.split(",") if i.strip() and int(i) < len(working)]
        if not working:
            self.error = "no working OpenCL device" + (f": {'; '.join(self.rejected)}" if self.rejected else "")
        return working

    def runtime(self, index: int) -> DeviceRuntime:
        runtime = self._runtimes.get(index)
        if runtime is None:
            runtime = self._runtimes[index] = DeviceRuntime(index, self.found()[index])
        return runtime

    def started(self) -> list[DeviceRuntime]:
        return list(self._runtimes.values())


DEVICES = Devices()


def runtime_of(index: int | None) -> DeviceRuntime:
    """The runtime of ``opencl:index`` (``opencl`` alone: device 0), started on first use."""
    return DEVICES.runtime(0 if index is None else index)


@atexit.register
def _drain() -> None:
    """Finish queued work and drop pooled memory while the contexts still exist."""
    for runtime in DEVICES.started():
        try:
            runtime.queue.finish()
            runtime.pool.free_held()
        except Exception:  # the process is ending; nothing useful to report
            pass
