"""Ember's dispatch layer: dtypes, devices, the op schema, promotion, the dispatcher and the backend contract.

``DispatchMode`` (PyTorch's ``TorchDispatchMode``) intercepts every op call; ``use_composite(op)`` runs an
op's composite definition instead of the backend's kernel; ``clear_plans``/``cached_plans`` manage and show
the cache of call plans.

Backends import only from here (``Backend``, ``hookimpl``, dtypes), never from the rest of Ember.
"""
from . import dtypes
from .backend import Backend, DeviceTimer
from .device import device
from .dtypes import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, bfloat16, bool_, dtype, float16, float32, float64,
                     int8, int16, int32, int64, uint8)
from .errors import (BackendError, DeviceError, DtypeError, EmberError, NumberOverflowError, OutOfMemoryError,
                     OutOfRangeError, ShapeError)
from .hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from .host import c_contiguous
from .modes import DispatchMode, TorchDispatchMode
from .plan import cached as cached_plans, clear as clear_plans, use_composite
from .promotion import can_cast, promote_types
from .ops.diagonals import diagonal_view
from .ops.views import view_strides
from .schema import OPS, OpDef, composites, primitives

__all__ = ["Backend", "DeviceTimer", "device", "dtype", "dtypes", "hookimpl", "hookspec", "PLUGIN_API_VERSION", "OPS", "OpDef",
           "primitives", "composites", "promote_types", "can_cast", "ALL_DTYPES", "FLOAT_DTYPES", "INT_DTYPES",
           "bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "view_strides", "diagonal_view", "EmberError", "DeviceError", "DtypeError", "ShapeError", "BackendError", "OutOfRangeError",
           "OutOfMemoryError", "NumberOverflowError", "DispatchMode",
           "TorchDispatchMode", "use_composite", "clear_plans", "cached_plans", "c_contiguous"]
