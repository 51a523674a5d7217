"""Ember's dispatch layer: dtypes, devices, the op schema, promotion, the dispatcher and the backend contract.

``DispatchMode`` (PyTorch's ``TorchDispatchMode``) intercepts every op call; ``use_composite(op)`` runs an
op's composite definition instead of the backend's kernel; ``clear_plans``/``cached_plans`` manage and show
the cache of call plans.

This top level is the whole backend API: backends (bundled or third-party) import only from here, never
from a submodule of ``ember.dispatch`` or from the rest of Ember (``tests/test_backend_contract.py``
checks). Besides the contract itself (``Backend``, ``backend_hooks``, ``hookimpl``, dtypes, errors), it
holds what backends share: the plugin ``registry``, the user's ``FLAGS``, the elementwise-fusion IR and
its renderers (``ElementwiseProgram``, ``render_c``, ...), ``adam_scalars``, float32 ``erf_float32`` and
``fast_exp``, ``InFlight`` and ``DeviceRuntime``. The names of modules that ``import ember`` does not
need are resolved on first use.
"""
import importlib as _importlib

from . import dtypes
from .backend import Backend, DeviceTimer
from .device import device
from .dtypes import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, bfloat16, bool_, dtype, float16, float32, float64,
                     int8, int16, int32, int64, uint8)
from .errors import (BackendError, DeviceError, DtypeError, EmberError, NumberOverflowError, OutOfMemoryError,
                     OutOfRangeError, ShapeError)
from .hookspecs import PLUGIN_API_VERSION, backend_hooks, hookimpl, hookspec
from .host import c_contiguous
from .modes import DispatchMode, TorchDispatchMode
from .plan import cached as cached_plans, clear as clear_plans, use_composite
from .promotion import can_cast, promote_types
from .ops.diagonals import diagonal_view
from .ops.views import view_strides
from .schema import OPS, OpDef, composites, primitives
from . import registry
from .fallback import get_fallback, set_fallback
from .flags import FLAGS
from .registry import available, register_plugin

#: Backend API names kept in other modules, imported when first asked for (name -> module).
_LAZY = {
    **dict.fromkeys(("ElementwiseProgram", "Step", "UnsupportedProgram", "value_dtype", "lower", "render_c",
                     "render_python", "CDialect", "CUDA", "OPENCL"), "fusion"),
    "adam_scalars": "ops.optim",
    "erf_float32": "fast_erf",
    "InFlight": "inflight",
    "DeviceRuntime": "device_runtime",
}
_LAZY_MODULES = ("fast_exp",)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    elif name in _LAZY_MODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["Backend", "DeviceTimer", "device", "dtype", "dtypes", "hookimpl", "hookspec", "PLUGIN_API_VERSION", "OPS", "OpDef",
           "primitives", "composites", "promote_types", "can_cast", "ALL_DTYPES", "FLOAT_DTYPES", "INT_DTYPES",
           "bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "view_strides", "diagonal_view", "EmberError", "DeviceError", "DtypeError", "ShapeError", "BackendError", "OutOfRangeError",
           "OutOfMemoryError", "NumberOverflowError", "DispatchMode",
           "TorchDispatchMode", "use_composite", "clear_plans", "cached_plans", "c_contiguous",
           # the rest of the backend API: plugins and the registry, flags, fusion, shared kernels' helpers
           "backend_hooks", "registry", "available", "register_plugin", "get_fallback", "set_fallback", "FLAGS",
           *_LAZY, *_LAZY_MODULES]
