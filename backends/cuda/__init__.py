"""The CUDA backend plugin (CuPy). Until its kernels land it registers as unavailable, with the reason."""
from __future__ import annotations

from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl


class CudaBackend(Backend):
    device_type = "cuda"
    kernels: dict = {}

    def unavailable_reason(self) -> str | None:
        try:
            import cupy
        except Exception as exc:  # ImportError, or CUDA libraries missing
            return f"CuPy is not importable ({type(exc).__name__}: {exc})"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            return f"no CUDA device ({type(exc).__name__}: {exc})"
        if count == 0:
            return "no CUDA device"
        return "the cuda backend's kernels are not implemented yet"


@hookimpl
def ember_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ember_register_backend() -> CudaBackend:
    return CudaBackend()
