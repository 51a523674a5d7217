"""The OpenCL backend plugin (PyOpenCL). Until its kernels land it registers as unavailable, with the reason."""
from __future__ import annotations

from ember.dispatch import PLUGIN_API_VERSION, Backend, hookimpl


class OpenCLBackend(Backend):
    device_type = "opencl"
    kernels: dict = {}

    def unavailable_reason(self) -> str | None:
        try:
            import pyopencl as cl
        except Exception as exc:
            return f"PyOpenCL is not importable ({type(exc).__name__}: {exc}); install ember[opencl]"
        try:
            devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        except Exception as exc:
            return f"no OpenCL platform ({type(exc).__name__}: {exc})"
        if not devices:
            return "no OpenCL device"
        return "the opencl backend's kernels are not implemented yet"


@hookimpl
def ember_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ember_register_backend() -> OpenCLBackend:
    return OpenCLBackend()
