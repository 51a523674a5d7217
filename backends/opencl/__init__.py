"""The OpenCL backend plugin, on PyOpenCL: every primitive as generated OpenCL C kernels.

PoCL makes it real on a CPU-only machine; the same kernels run on any OpenCL 1.2+ device.
Importing this module never touches OpenCL: devices are probed on first use.
"""
from __future__ import annotations

from ember.dispatch import backend_hooks

from .backend import OpenCLBackend

ember_plugin_api_version, ember_register_backend = backend_hooks(OpenCLBackend)
