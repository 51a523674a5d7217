"""safetensors files: ``{name: tensor}`` that other frameworks (and ``safetensors.torch``) read and write."""
from __future__ import annotations

import os

from ..dispatch import registry
from ..tensor import Tensor
from .atomic import atomic_path
from .errors import CheckpointError
from .tensors import DTYPES, host_values, make_tensor, type_name

_SAFETENSORS_DTYPES = {"BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64"}


def save_safetensors(tensors: dict, path, metadata: dict | None = None) -> None:
    """Write ``{name: tensor}`` as a safetensors file (atomically), readable by ``safetensors.torch`` and others."""
    from safetensors.numpy import save_file
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors: expected a dict of tensors, got {type_name(type(tensors))}")
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: expected str names and tensors, got {name!r}: {type_name(type(t))}")
        arrays[name] = host_values(t)  # safetensors reads raw memory, so it must be C-contiguous
    with atomic_path(path) as temp:
        save_file(arrays, temp, metadata=metadata)


def load_safetensors(path, device="cpu") -> dict:
    """Read a safetensors file into ``{name: tensor}`` on ``device``."""
    from safetensors import SafetensorError, safe_open
    dev = registry.resolve_device(device)
    out = {}
    try:
        with safe_open(os.fspath(path), framework="np") as f:
            for name in f.keys():
                code = f.get_slice(name).get_dtype()
                if code not in _SAFETENSORS_DTYPES:
                    raise CheckpointError(f"load_safetensors: tensor {name!r} has dtype {code}, which Ember does "
                                          f"not support")
                array = f.get_tensor(name)
                out[name] = make_tensor(array, DTYPES[array.dtype.name], dev)
    except SafetensorError as exc:
        raise CheckpointError(f"load_safetensors: {os.fspath(path)} is not a valid safetensors file: {exc}") from None
    return out
