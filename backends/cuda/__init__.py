"""The CUDA backend plugin on CuPy: devices ``cuda:N``, registered through the ``ember.backends`` entry point.

Importing this module imports no CuPy: the backend finds out whether it can run (CuPy installed, CUDA
libraries loadable, a device present) the first time it is asked, and says why not otherwise.
"""
from ember.dispatch import backend_hooks

from .backend import CudaBackend

# torch.backends.cuda's switches live at this path in PyTorch; they are no part of the plugin, only
# re-exported here from ember.backends.flags (they import no CuPy).
from ember.backends.flags.cuda import is_built, matmul  # noqa: E402,F401

ember_plugin_api_version, ember_register_backend = backend_hooks(CudaBackend)
