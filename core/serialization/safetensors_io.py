"""safetensors files: ``{name: tensor}`` that other frameworks (and ``safetensors.torch``) read and write."""
from __future__ import annotations

import os

from ..dispatch.contract import registry
from ..dispatch.schema.errors import DtypeError
from ..tensor import Tensor
from .atomic import atomic_path
from .errors import CheckpointError, in_file
from .tensors import DTYPES, checked_shape, host_values, make_tensor, type_name

_ITEMSIZES = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2, "F32": 4, "F64": 8,
              "C64": 8}
#: Ember dtypes the safetensors format has no code for (it has C64, not C128)
_UNWRITABLE = frozenset({"complex128"})


def save_safetensors(tensors: dict, path, metadata: dict | None = None) -> None:
    """Write ``{name: tensor}`` as a safetensors file (atomically), readable by ``safetensors.torch`` and others."""
    from safetensors.numpy import save_file
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors: expected a dict of tensors, got {type_name(type(tensors))}")
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: expected str names and tensors, got {name!r}: {type_name(type(t))}")
        if t.dtype.name in _UNWRITABLE:
            raise DtypeError(f"save_safetensors: the safetensors format has no {t.dtype.name} dtype (tensor {name!r} "
                             f"of shape {tuple(t.shape)}); convert it (complex64 is supported) or use ember.save")
        arrays[name] = host_values(t)  # safetensors reads raw memory, so it must be C-contiguous
    with atomic_path(path) as temp:
        save_file(arrays, temp, metadata=metadata)


def load_safetensors(path, device="cpu") -> dict:
    """Read a safetensors file into ``{name: tensor}`` on ``device``."""
    from safetensors import SafetensorError, safe_open
    dev = registry.resolve_device(device)
    out = {}
    with in_file("load_safetensors", path):
        try:
            with safe_open(os.fspath(path), framework="np") as f:
                for name in f.keys():
                    record = f.get_slice(name)
                    code = record.get_dtype()
                    if code not in _ITEMSIZES:
                        raise CheckpointError(f"tensor {name!r} has dtype {code}, which Ember does not support")
                    checked_shape(record.get_shape(), _ITEMSIZES[code], f"tensor {name!r}")
                    array = f.get_tensor(name)
                    out[name] = make_tensor(array, DTYPES[array.dtype.name], dev)
        except SafetensorError as exc:
            raise CheckpointError(f"not a valid safetensors file: {exc}") from None
    return out
