"""The base class every backend subclasses: capabilities, storage, kernels, RNG, memory."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..schema.dtypes import REAL_DTYPES, bfloat16, dtype, float16
from ..schema.errors import DeviceError

if TYPE_CHECKING:
    from .device_runtime import DeviceRuntime
    from .sparse_kernels import SparseKernels
    from ..fusion import ElementwiseProgram


class Backend:
    """One device type. Subclasses set ``device_type`` and ``kernels`` and override storage hooks.

    A *native array* is whatever the backend computes on (a NumPy array, a CuPy array, ...).
    It must expose ``.shape`` as a tuple of ints. Kernels receive native arrays already
    promoted to the op's computation dtype, plus the op's attributes, and return native
    arrays; they do no argument checking of their own.
    """

    # Every attribute a backend may set is declared here, so that core reads them plainly (no getattr).
    device_type: str = ""
    #: op name -> kernel: every primitive, plus any composite the backend overrides.
    kernels: dict[str, Callable[..., Any]] = {}
    #: Whether the kernels of simple elementwise ops take a Python number (a float, or an int 0 <= v < 128)
    #: for an operand as it is; otherwise it arrives as a 0-d native array of the computation dtype.
    accepts_python_scalars: bool = False
    #: The optional DLPack import hook (``ember.from_dlpack``): ``from_dlpack(producer, copy)`` returns a
    #: native array sharing ``producer``'s device memory. None where the backend cannot import DLPack.
    from_dlpack: Callable[[Any, bool | None], Any] | None = None
    #: Whether checks of tensor values (indices in range, class targets) wait for the device's next
    #: synchronisation instead of reading the values at once (``ember.dispatch.execution.deferred_checks``,
    #: PyTorch's device asserts). False (the default) where native arrays live in host memory, so reading
    #: costs no sync and errors stay immediate; True for devices with a queue of their own (cuda, opencl).
    defers_value_checks: bool = False

    # -- capabilities ------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        """None when the backend can run here, else a short reason ("no CUDA device")."""
        return None

    def device_count(self) -> int:
        return 1

    def default_index(self) -> int | None:
        """The index a bare device type (``"cuda"``) stands for; None for single-device types."""
        return 0

    def set_default_index(self, index: int) -> None:
        """Make ``index`` the device a bare device type stands for (``ember.cuda.set_device``)."""
        if index != self.default_index():
            raise ValueError(f"{self.device_type}: the default device cannot be changed (asked for index {index})")

    def supported_dtypes(self, index: int | None) -> frozenset[dtype]:
        """The dtypes this device holds. Every real dtype by default; a backend that computes in complex64
        and complex128 lists them too (docs/backends.md, "Complex numbers", says what that takes)."""
        return frozenset(REAL_DTYPES)

    def autocast_dtypes(self, index: int | None) -> frozenset[dtype]:
        """The low-precision dtypes ``ember.autocast`` may run this device's ops in. By default those of
        float16 and bfloat16 the device supports; a backend whose low-precision kernels are not worth
        running (storage only) declares fewer."""
        return frozenset(d for d in (float16, bfloat16) if d in self.supported_dtypes(index))

    def storage_only_dtypes(self, index: int | None) -> frozenset[dtype]:
        """Supported dtypes this device holds but does not compute in: every kernel call that reads or makes
        one runs in float32 and rounds its results back (``ember.dispatch.execution.storage_dtypes``). CUDA's bfloat16,
        which CuPy stores but has few loops for, is one."""
        return frozenset()

    def describe(self, index: int | None) -> str:
        """The device's name for messages ("NVIDIA H100", "pthread-AMD EPYC (Portable Computing Language)")."""
        return self.device_type if index is None else f"{self.device_type}:{index}"

    # -- storage -----------------------------------------------------------------
    def from_numpy(self, array, dtype: dtype, index: int | None):
        """A new native array on device ``index`` holding ``array`` converted to ``dtype``."""
        raise NotImplementedError(f"{type(self).__name__} must implement from_numpy()")

    def to_numpy(self, native):
        """A NumPy array with the contents of ``native`` (waits for pending work)."""
        raise NotImplementedError(f"{type(self).__name__} must implement to_numpy()")

    def strides(self, native) -> tuple[int, ...]:
        """Strides of ``native`` in elements."""
        raise NotImplementedError(f"{type(self).__name__} must implement strides()")

    def storage_id(self, native) -> int:
        """An identifier shared by every view of one allocation."""
        raise NotImplementedError(f"{type(self).__name__} must implement storage_id()")

    def to_index(self, native, index: int | None):
        """Copy ``native`` to another device of this backend."""
        return native

    # -- execution ---------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        """Seed the default generator of every device."""

    def new_generator(self, index: int | None):
        """A fresh generator object for ``generator=`` arguments of random kernels."""
        raise NotImplementedError(f"{type(self).__name__} must implement new_generator()")

    def default_generator(self, index: int | None):
        raise NotImplementedError(f"{type(self).__name__} must implement default_generator()")

    def synchronize(self, index: int | None) -> None:
        """Block until queued work on the device is done."""

    def memory_stats(self, index: int | None) -> dict[str, int]:
        """At least ``allocated_bytes`` and ``peak_bytes`` where the backend can tell."""
        return {}

    def reset_peak_memory_stats(self, index: int | None) -> None:
        """Start ``peak_bytes`` over from what is allocated now (a no-op where there is no peak)."""

    def empty_cache(self, index: int | None) -> None:
        """Return cached but unused memory to the device (a no-op where nothing is cached)."""

    # -- optional hooks ----------------------------------------------------------
    #: Kernels that write their result into a given array (optional): op name -> a function taking the same
    #: arguments as ``kernels[name]`` plus the keyword ``out``, a native array of the call's result shape and
    #: dtype, which it fills and returns (None: it declines this call). An in-place call of an elementwise op
    #: (``x.add_(y)``, ``x += y``) then runs one kernel with ``out=`` the target's array, instead of the
    #: out-of-place kernel and ``copy_``. Ops missing here keep that road. See docs/backends.md, "In-place kernels".
    out_kernels: dict[str, Callable[..., Any]] = {}
    #: Whether ``out_kernels`` take any ``out`` as it is: strided, overlapping its own elements or an operand's
    #: (NumPy's ufuncs buffer what overlaps). False (the default): ``writes_into`` is asked on every call.
    writes_into_any: bool = False

    def writes_into(self, out, operands: tuple) -> bool:
        """Whether ``out_kernels`` may write into native ``out`` while reading ``operands`` (the call's other
        native arrays) element for element: asked per in-place call where ``writes_into_any`` is False. The
        default: no two elements of ``out`` share an address, and each operand is ``out`` itself (``x.add_(x)``)
        or lives in another allocation; a write that would race with its own reads takes the copy road."""
        if not no_internal_overlap(out.shape, self.strides(out)):
            return False
        storage = None
        for a in operands:
            if a is not out:
                if storage is None:
                    storage = self.storage_id(out)
                if self.storage_id(a) == storage:
                    return False
        return True

    def device_timer(self, index: int | None) -> "DeviceTimer | None":
        """The timer of device ``index`` for ``ember.profiler``'s device time, or None where the
        backend cannot time its own work (the default: the profiler then reports host time only)."""
        return None

    def device_runtime(self) -> "DeviceRuntime":
        """Streams, events, ``record_stream``, device properties, free memory and profiler ranges
        (``ember.dispatch.contract.device_runtime``), for ``ember.cuda``'s Stream, Event and device queries. The
        default raises: a device type without them still computes, on its own implicit order of work."""
        raise DeviceError(f"{self.device_type}: this backend has no streams, events or device properties "
                          f"(it does not implement the optional device_runtime hook)")

    def sparse_kernels(self) -> "SparseKernels | None":
        """Native sparse products (``ember.dispatch.contract.sparse_kernels``) for ``ember.sparse``, or None
        (the default): sparse products on this device then run on the CPU backend's, through host copies."""
        return None

    #: Whether ``fuse_elementwise`` computes programs that end in a reduction (``program.reduction``); the
    #: compiler offers such programs only where this is True.
    fuses_reductions: bool = False

    def fuse_elementwise(self, program: "ElementwiseProgram", index: int | None) -> Callable[..., tuple] | None:
        """A kernel computing ``program`` (``ember.dispatch.fusion``) in one pass, or None where this backend
        cannot (the default): the compiler then runs the steps op by op.

        The kernel takes the program's input native arrays (any strides, shapes broadcasting to
        ``program.shape``) and returns a tuple of fresh native arrays, one per output, each of shape
        ``program.shape`` and dtype ``steps[j].out``. This hook is called once per program when a graph is
        built (it may compile, and should cache by ``program.key()``); the kernel runs on every replay."""
        return None


class DeviceTimer:
    """What ``Backend.device_timer`` returns: markers placed in the device's own order of work.

    ``mark()`` queues a marker behind the work already queued on the device and returns it without
    waiting; ``elapsed_ms(start, end)`` waits until ``end`` is reached and returns the device's
    milliseconds between the two markers (OpenCL profiling events, CUDA events).
    """

    def mark(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement mark()")

    def elapsed_ms(self, start: Any, end: Any) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement elapsed_ms()")


def no_internal_overlap(shape: tuple, strides: tuple) -> bool:
    """Whether an array of ``shape`` and element ``strides`` has no two elements at one address: each dim's
    stride, smallest first, steps past everything the smaller dims reach (a sufficient test, exact for views
    made by slicing, transposing and expanding)."""
    reach = 0
    for stride, size in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True
