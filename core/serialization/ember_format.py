"""The Ember checkpoint file: what ``ember.save`` writes and ``ember.load`` reads back.

    offset 0       MAGIC (8 bytes), format version (uint32 LE), reserved (uint32 LE, 0)
    offset 64 ...  data blobs, each starting 64-byte aligned: C-order little-endian tensor values, NumPy
                   array bytes, bytes objects, and (version 2) one pickle of the objects JSON cannot hold
    after them     the header: UTF-8 JSON ``{"tensors": [record, ...], "arrays": [...], "objects": {...},
                   "root": node}`` ("arrays" and "objects" only when there are any)
    last 28 bytes  footer: header offset (uint64 LE), header length (uint64 LE), header CRC-32 (uint32 LE),
                   END_MAGIC (8 bytes)

The header goes last so that tensors stream out one at a time (a GPU state dict never needs a second,
host-side copy of itself) with their CRC-32s known by the time the header is written, and so that a
truncated file is recognisable by its missing end marker.

Nodes of the object tree: JSON null, booleans, integers, finite floats, strings and arrays stand for
themselves (a JSON array is a Python list); everything else is an object tagged with ``"$"``:
``tuple`` and ``dict``/``odict`` (key/value pairs, so keys keep their types: optimizer state has int keys),
``float`` (nan and infinities), ``bytes``, ``tensor`` (an index into ``tensors``, so one tensor object
saved twice loads as one tensor object), ``ndarray`` (an index into ``arrays``: NumPy arrays and scalars
of plain dtypes are data too) and ``object`` (an index into the list that the ``objects`` pickle holds).
A tensor record gives dtype, shape, saved device, requires_grad, whether it was an ``nn.Parameter``, and
the offset, length and CRC-32 of its bytes. The pickle never holds a tensor or an array: it refers to
their records by persistent id, ``("tensor", i)`` or ``("ndarray", i)``, and the header lists the globals
it names, so a reader can tell what loading it would import before doing so.
"""
from __future__ import annotations

import re
import struct
import sys

import ml_dtypes
import numpy as np

MAGIC = b"\x89EMBER\r\n"  # the \r\n and the high byte show up damage from text-mode transfers
END_MAGIC = b"EMBEREND"
FORMAT_VERSION = 2  # 2 added NumPy arrays and pickled objects; version 1 files still load
READABLE_VERSIONS = (1, 2)
ALIGNMENT = 64
PICKLE_PROTOCOL = 4
HEAD = struct.Struct("<8sII")
FOOTER = struct.Struct("<QQI8s")


def max_header_bytes() -> int:
    """The knob ``ember.serialization.MAX_HEADER_BYTES``, read at each load so that it can be changed."""
    return sys.modules[__package__].MAX_HEADER_BYTES


# -- NumPy dtypes as header strings ----------------------------------------------------------------------

_ML_DTYPES = {name for name in dir(ml_dtypes)
              if isinstance(getattr(ml_dtypes, name), type) and issubclass(getattr(ml_dtypes, name), np.generic)}
_PLAIN_DTYPE = re.compile(r"[<>|=][biufcSUmM]\d+(\[\w+\])?")


def array_dtype_code(dt: np.dtype) -> str | None:
    """How the header spells a NumPy dtype stored as data ('<f4', '|b1', 'bfloat16'); None for dtypes that
    hold Python objects or fields, which are pickled instead."""
    if dt.itemsize == 0 or dt.fields is not None or dt.subdtype is not None:
        return None
    if dt.type.__module__ == "ml_dtypes" and dt.name in _ML_DTYPES:
        return dt.name
    return dt.str if _PLAIN_DTYPE.fullmatch(dt.str) else None


def array_dtype(code) -> np.dtype | None:
    if not isinstance(code, str):
        return None
    if code in _ML_DTYPES:
        return np.dtype(getattr(ml_dtypes, code))
    return np.dtype(code) if _PLAIN_DTYPE.fullmatch(code) else None


def is_data_array(obj) -> bool:
    return isinstance(obj, (np.ndarray, np.generic)) and array_dtype_code(obj.dtype) is not None
