"""The CPU backend: NumPy arrays, registered through the ``ember.backends`` entry point like any plugin."""
from ember.dispatch import backend_hooks

from .backend import CpuBackend

ember_plugin_api_version, ember_register_backend = backend_hooks(CpuBackend)
