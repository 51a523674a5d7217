"""Whether CuPy can run here, and if not, which of the three usual reasons applies.

Checked once per process, on first use (never at ``import ember``): CuPy not installed, CuPy
installed but the CUDA libraries (driver, runtime, NVRTC, cuBLAS, cuRAND) cannot be loaded, or no
CUDA device. Each gives its own message, so that ``ember.backends.available()`` says what to fix.
"""
from __future__ import annotations

import importlib
from types import ModuleType

_NO_DEVICE = 100  # cudaErrorNoDevice
_INSUFFICIENT_DRIVER = 35  # cudaErrorInsufficientDriver
_NO_DRIVER_HINT = "is an NVIDIA driver installed and loaded?"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def import_cupy() -> tuple[ModuleType | None, str | None]:
    """(cupy, None), or (None, why CuPy cannot be imported)."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "cupy":
            return None, ("CuPy is not installed; on a machine with an NVIDIA GPU install the cuda extra "
                          "(pip install 'ember[cuda]', which brings cupy-cuda13x for CUDA 13 drivers; "
                          "'ember[cuda12]' brings cupy-cuda12x for CUDA 12 ones)")
        return None, f"CuPy is installed but cannot be imported: a module it needs is missing ({_describe(exc)})"
    except Exception as exc:  # ImportError from a missing shared library, OSError, CUDA errors at import
        return None, f"CuPy is installed but its CUDA libraries could not be loaded ({_describe(exc)})"
    return cupy, None


def _runtime_status(exc: BaseException) -> int | None:
    """The cudaError_t of a CuPy CUDARuntimeError (its ``status``), also recognised by name in the message."""
    status = getattr(exc, "status", None)
    if status is None:
        text = str(exc)
        if "cudaErrorNoDevice" in text:
            return _NO_DEVICE
        if "cudaErrorInsufficientDriver" in text:
            return _INSUFFICIENT_DRIVER
    return status


def device_count(cupy: ModuleType) -> tuple[int, str | None]:
    """(number of CUDA devices, None), or (0, why they cannot be counted)."""
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        status = _runtime_status(exc)
        if status == _NO_DEVICE:
            return 0, "no CUDA device: the CUDA runtime loaded but found no GPU (cudaErrorNoDevice)"
        if status == _INSUFFICIENT_DRIVER:
            return 0, (f"CUDA libraries missing: the NVIDIA driver is missing or older than CuPy's CUDA runtime "
                       f"({_describe(exc)}); {_NO_DRIVER_HINT}")
        return 0, f"CUDA libraries missing: the CUDA runtime could not be initialised ({_describe(exc)})"
    if count == 0:
        return 0, "no CUDA device: the CUDA runtime reports 0 GPUs"
    return count, None


def libraries(cupy: ModuleType) -> str | None:
    """None when the libraries the kernels need load, else which one does not (with the error)."""
    try:
        cupy.cuda.runtime.runtimeGetVersion()
    except Exception as exc:
        return f"CUDA libraries missing: the CUDA runtime library could not be loaded ({_describe(exc)})"
    try:
        cupy.cuda.nvrtc.getVersion()  # CuPy compiles every elementwise kernel with NVRTC
    except Exception as exc:
        return (f"CUDA libraries missing: NVRTC (the runtime compiler CuPy needs for its kernels) could not be "
                f"loaded ({_describe(exc)}); install nvidia-cuda-nvrtc-cu12 or the CUDA toolkit")
    for library, what in (("cublas", "cuBLAS"), ("curand", "cuRAND")):
        try:
            getattr(cupy.cuda, library)  # CuPy loads these libraries when the attribute is first read
        except Exception as exc:
            return f"CUDA libraries missing: {what} could not be loaded ({_describe(exc)})"
    try:
        importlib.import_module("cupyx.scipy.special")
    except Exception as exc:
        return f"CUDA libraries missing: cupyx.scipy.special could not be loaded ({_describe(exc)})"
    return None


def probe() -> tuple[ModuleType | None, int, str | None]:
    """(cupy, device count, None) when the backend can run, else (cupy or None, 0, the reason)."""
    cupy, reason = import_cupy()
    if cupy is None:
        return None, 0, reason
    count, reason = device_count(cupy)
    if reason is None:
        reason = libraries(cupy)
    return (cupy, count, None) if reason is None else (cupy, 0, reason)
