"""Ember's dispatch layer: dtypes, devices, the op schema, promotion, the dispatcher and the backend contract.

Its modules live in four rooms: ``schema/`` (the op schema, dtypes, devices, promotion, errors: the bottom
room), ``ops/`` (the op declarations, one folder per family), ``execution/`` (one call's path: dispatcher,
plans, executor, modes) and ``contract/`` (what a backend is and how it is found); beside them, the
elementwise formulas (``fusion``, ``formula_composite``, ``fast_erf``, ``fast_exp``) and ``python -m
ember.dispatch`` (``__main__``, ``op_report``). See docs/architecture.md.

``DispatchMode`` (PyTorch's ``TorchDispatchMode``) intercepts every op call; ``use_composite(op)`` runs an
op's composite definition instead of the backend's kernel; ``clear_plans``/``cached_plans`` manage and show
the cache of call plans.

This top level is the whole backend API: backends (bundled or third-party) import only from here, never
from a submodule of ``ember.dispatch`` or from the rest of Ember (``tests/test_backend_contract.py``
checks). Besides the contract itself (``Backend``, ``backend_hooks``, ``hookimpl``, dtypes, errors), it
holds what backends share: the plugin ``registry``, the user's ``FLAGS``, the elementwise-fusion IR and
its lowering (``ElementwiseProgram``, ``lower``, ...; the renderers are ``ember.backends.codegen``), ``adam_scalars``, float32 ``erf_float32`` and
``fast_exp``, ``InFlight`` and ``DeviceRuntime``. The names of modules that ``import ember`` does not
need are resolved on first use.
"""
import importlib as _importlib
import sys as _sys

from .schema import dtypes
from .contract.backend import Backend, DeviceTimer
from .schema.device import device
from .schema.dtypes import (ALL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, REAL_DTYPES, bfloat16, bool_,
                            complex64, complex128, dtype, float16, float32, float64, int8, int16, int32, int64, uint8)
from .schema.errors import (ArgumentError, BackendError, DeviceError, DtypeError, EmberError, NumberOverflowError,
                            OutOfMemoryError, OutOfRangeError, ShapeError, UnsupportedDtypeError)
from .contract.hookspecs import PLUGIN_API_VERSION, backend_hooks, hookimpl, hookspec
from .contract.host import c_contiguous
from .execution.modes import DispatchMode, TorchDispatchMode
from .execution.plan import cached as cached_plans, clear as clear_plans, use_composite
from .schema.promotion import can_cast, promote_types
from .ops.shapes.diagonals import diagonal_view
from .ops.shapes.views import view_strides
from .schema import OPS, OpDef, builtin_ops, composites, primitives
from .contract import registry
from .execution.fallback import get_fallback, set_fallback
from .contract.flags import FLAGS, watch as watch_flags
from .contract.registry import available, register_plugin

# Pickles written before ember.dispatch had rooms name ``ember.dispatch.dtypes.from_name`` (a dtype) and
# ``ember.dispatch.device.device`` (a device): those module paths stay importable, as the modules themselves.
_sys.modules.setdefault(f"{__name__}.dtypes", dtypes)
_sys.modules.setdefault(f"{__name__}.device", _sys.modules[f"{__name__}.schema.device"])

#: Backend API names kept in other modules, imported when first asked for (name -> module).
_LAZY = {
    **dict.fromkeys(("ElementwiseProgram", "Step", "Instr", "UnsupportedProgram", "FormulaError", "value_dtype",
                     "lower", "formula", "parse_formula", "convert_constant", "accumulator_dtype", "reduction_identity"), "fusion"),
    "adam_scalars": "ops.training.optim",
    **dict.fromkeys(("multi_tensor_step", "MultiTensorStep", "update_programs"), "ops.training.multi_tensor"),
    "erf_float32": "fast_erf",
    "InFlight": "contract.inflight",
    "DeviceRuntime": "contract.device_runtime",
    "DeviceGraphs": "contract.device_runtime",
    "SparseKernels": "contract.sparse_kernels",
}
_LAZY_MODULES = ("fast_exp", "fast_erf")


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
           "builtin_ops", "primitives", "composites", "promote_types", "can_cast", "ALL_DTYPES", "FLOAT_DTYPES",
           "INT_DTYPES", "REAL_DTYPES", "COMPLEX_DTYPES", "bool_", "uint8", "int8", "int16", "int32", "int64",
           "float16",
           "bfloat16", "float32", "float64", "complex64", "complex128",
           "view_strides", "diagonal_view", "EmberError", "DeviceError", "DtypeError", "ShapeError", "BackendError", "OutOfRangeError",
           "ArgumentError", "UnsupportedDtypeError",
           "OutOfMemoryError", "NumberOverflowError", "DispatchMode",
           "TorchDispatchMode", "use_composite", "clear_plans", "cached_plans", "c_contiguous",
           # the rest of the backend API: plugins and the registry, flags, fusion, shared kernels' helpers
           "backend_hooks", "registry", "available", "register_plugin", "get_fallback", "set_fallback", "FLAGS",
           "watch_flags",
           *_LAZY, *_LAZY_MODULES]
