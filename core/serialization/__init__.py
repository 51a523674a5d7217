"""``ember.save`` and ``ember.load`` with PyTorch's semantics, safetensors, and tensor pickling.

``save`` takes any picklable object, as ``torch.save`` does, but keeps data as data: tensors and NumPy arrays
are byte records with CRC-32s, plain containers and numbers are a JSON tree, and only what JSON cannot hold
is pickled, with its globals recorded (``ember_format``). ``load`` reads those files and ``torch.save``
files (``torch_format``, without importing torch). With ``weights_only=True``, the default, no pickle can
name a global outside the allow list (``safe_globals``), so loading a file never runs its code.
"""
from __future__ import annotations

import copyreg
import os

import numpy as np

from ..dispatch.contract import registry
from ..tensor import Tensor
from .atomic import atomic_path
from .ember_format import MAGIC
from .ember_reader import Decoder, check_head, read_header
from .ember_writer import Encoder, write_checkpoint
from .errors import CheckpointError, UnpicklingError, in_file
from .safe_globals import (BUILTIN_SAFE, add_safe_globals, clear_safe_globals, get_safe_globals, pickle_globals,
                           safe_globals, unsafe_among)
from .safetensors_io import load_safetensors, save_safetensors
from .source import Source, names_a_zip_entry
from .tensors import DTYPES, NUMPY, DeviceMap, is_parameter, make_tensor, type_name
from . import torch_format

__all__ = ["CheckpointError", "UnpicklingError", "save", "load", "save_safetensors", "load_safetensors",
           "rebuild_tensor", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

MAX_HEADER_BYTES = 256 * 2 ** 20  # refuse to read more JSON than this before anything is validated
MAX_STREAM_BYTES = 2 ** 30  # a non-seekable stream is buffered first (on disk past 8 MiB), up to this many bytes


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def save(obj, f) -> None:
    """Write ``obj`` (any picklable object: state dicts, whole modules, NumPy arrays, dataclasses...) to a
    path or a binary file object.

    Tensors are stored as their own values in C order, whichever device they are on and whether or not
    they are views; the same tensor object stored twice is written once, also when it sits inside a
    pickled object. A path is replaced atomically: a failure at any point leaves the previous file as it
    was. An object that cannot be pickled raises ``TypeError`` naming its type and where it sits
    (``obj['layers'][2]``) before anything is written.
    """
    encoder = Encoder()
    _, header = encoder.encode_root(obj)
    if _is_path(f):
        with atomic_path(f) as temp, open(temp, "wb") as out:  # atomic_path created the file, and locks it
            write_checkpoint(header, encoder, out)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {type_name(type(f))}")
    write_checkpoint(header, encoder, f)
    if hasattr(f, "flush"):
        f.flush()


def load(f, map_location=None, weights_only: bool = True):
    """Read what ``ember.save`` or ``torch.save`` wrote, from a path or a binary file object.

    ``map_location`` chooses where tensors go: None (the device each was saved on, which must be
    available), a device or device string, a dict ``{saved: target}`` (keys like ``"cuda:1"`` or a bare
    type ``"cuda"``; unmatched devices stay), or a callable taking the saved device string and returning a
    target (None: keep). With ``weights_only=True`` only tensors, NumPy arrays, containers, numbers,
    strings and what ``add_safe_globals`` allowed are built; any other pickled global raises
    ``UnpicklingError`` naming it. ``weights_only=False`` unpickles arbitrary objects: use it only for
    files you trust. Anything malformed raises ``CheckpointError``.
    """
    devices = DeviceMap(map_location)
    if _is_path(f):
        with open(f, "rb") as stream, in_file("ember.load", f):
            return _load_stream(stream, devices, weights_only)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got {type_name(type(f))}")
    with in_file("ember.load", f):
        return _load_stream(f, devices, weights_only)


def _load_stream(stream, devices: DeviceMap, weights_only: bool):
    source = Source(stream, recognise=_recognise)
    kind = _sniff(source)
    if kind == "ember":
        header = read_header(source)
        try:
            result = Decoder(source, header, devices, weights_only).decode(header["root"], ())
        except RecursionError:
            raise CheckpointError("the object tree is nested too deeply to load") from None
    elif kind == "torch-zip":
        result = torch_format.load_zip(source.rest(), devices, weights_only)
    else:
        result = torch_format.load_legacy(source.rest(), devices, weights_only)
    source.finish()
    return result


def _sniff(source: Source) -> str:
    """Which reader a file needs; a file none can read is refused with what it seems to be."""
    return _recognise(source.head(64), source.tail(1))


def _recognise(head: bytes, tail: bytes = b"") -> str:
    """Which reader a checkpoint starting with ``head`` needs, decided from its first bytes alone, so that a
    stream that is no checkpoint (or one this Ember cannot read) is refused before the rest is read."""
    if head[:8] == MAGIC and len(head) >= 16:
        check_head(head)
        return "ember"
    if head[:4] == b"PK\x03\x04":
        if not names_a_zip_entry(head):
            raise CheckpointError("a zip archive whose first entry has no name: not a torch.save checkpoint")
        return "torch-zip"
    if torch_format.looks_like_legacy(head):
        return "torch-legacy"
    raise _refuse_foreign(head, tail)


def _refuse_foreign(head: bytes, tail: bytes) -> CheckpointError:
    """Name what the file seems to be instead, so that the user knows what to do with it."""
    if _looks_like_pickle(head, tail):
        return CheckpointError("this is a bare Python pickle, not an ember.save or torch.save checkpoint; "
                               "ember.load does not unpickle it, because unpickling can run arbitrary code")
    if len(head) >= 9 and head[8:9] == b"{":
        return CheckpointError("this looks like a safetensors file; load it with "
                               "ember.serialization.load_safetensors")
    if len(head) < 16:
        return CheckpointError(f"the file is only {len(head)} bytes long, too short for an Ember checkpoint "
                               f"(truncated?)")
    return CheckpointError(f"not an Ember checkpoint: it starts with {head[:8]!r}, expected {MAGIC!r}")


def _looks_like_pickle(head: bytes, tail: bytes) -> bool:
    """Protocol 2+ pickles start with PROTO (0x80, version); protocol 0/1 ones start with an opcode and end
    with STOP ('.'). Only used to word the refusal: whatever the file is, it is never unpickled."""
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    return tail == b"." and head[:1] in (b"(", b"]", b"}", b"c", b"I", b"L", b"F", b"S", b"V", b"N", b"i", b")")


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The ``module.qualname`` of every global the checkpoint's pickle names that ``weights_only`` loading
    would refuse (neither built in nor allowed with ``add_safe_globals``); read without unpickling."""
    with in_file("get_unsafe_globals_in_checkpoint", f):
        if _is_path(f):
            with open(f, "rb") as stream:
                return _unsafe_globals(stream)
        return _unsafe_globals(f)


def _unsafe_globals(stream) -> list[str]:
    source = Source(stream, recognise=_recognise)
    kind = _sniff(source)
    if kind == "ember":
        header = read_header(source)
        data = Decoder(source, header, DeviceMap(None), True).pickled_bytes()
        names = pickle_globals(data, "the pickled objects of this checkpoint") if data is not None else []
    elif kind == "torch-zip":
        names = torch_format.zip_globals(source.rest())
    else:
        names = torch_format.legacy_globals(source.rest())
    source.finish()
    return [n for n in unsafe_among(names, BUILTIN_SAFE) if not torch_format.is_known_torch_global(n)]


# -- pickling, for DataLoader workers and for tensors inside pickled objects ---------------------------------

def _reduce_tensor(t: Tensor):
    """How pickle and ``copy`` take a tensor apart: its values on the host, and where to rebuild them.
    Registered with ``copyreg`` below, so that the Tensor class does not depend on this package."""
    return rebuild_tensor, (t._host(), t.dtype.name, str(t.device), t.requires_grad, is_parameter(t))


def rebuild_tensor(array, dtype_name: str, device_str: str, requires_grad: bool, parameter: bool = False) -> Tensor:
    """Unpickle a tensor that ``_reduce_tensor`` reduced to a host array, on its device."""
    dt = DTYPES.get(dtype_name)
    if dt is None:
        raise TypeError(f"rebuild_tensor: unknown dtype {dtype_name!r}")
    array = np.asarray(array)
    if array.dtype != NUMPY[dt]:
        array = array.astype(NUMPY[dt])
    return make_tensor(array, dt, registry.resolve_device(device_str), requires_grad, parameter)


copyreg.pickle(Tensor, _reduce_tensor)
