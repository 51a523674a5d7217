"""The CPU backend: NumPy arrays, registered through the ``ember.backends`` entry point like any plugin."""
from ember.dispatch import PLUGIN_API_VERSION, hookimpl

from .backend import CpuBackend


@hookimpl
def ember_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ember_register_backend() -> CpuBackend:
    return CpuBackend()
