"""Ember's dispatch layer: dtypes, devices, the op schema, promotion, the dispatcher and the backend contract.

Backends import only from here (``Backend``, ``hookimpl``, dtypes), never from the rest of Ember.
"""
from . import dtypes
from .backend import Backend
from .device import device
from .dtypes import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, bfloat16, bool_, dtype, float16, float32, float64,
                     int8, int16, int32, int64, uint8)
from .errors import BackendError, DeviceError, DtypeError, EmberError, ShapeError
from .hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from .promotion import can_cast, promote_types
from .ops.views import view_strides
from .schema import OPS, OpDef, composites, primitives

__all__ = ["Backend", "device", "dtype", "dtypes", "hookimpl", "hookspec", "PLUGIN_API_VERSION", "OPS", "OpDef",
           "primitives", "composites", "promote_types", "can_cast", "ALL_DTYPES", "FLOAT_DTYPES", "INT_DTYPES",
           "bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "view_strides", "EmberError", "DeviceError", "DtypeError", "ShapeError", "BackendError"]
