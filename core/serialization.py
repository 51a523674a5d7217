"""Checkpoints that are data, never code: ``ember.save``, ``ember.load``, safetensors, tensor pickling.

Why not pickle: unpickling a file may call any importable function, so a downloaded ``.pt`` file is a
program. An Ember checkpoint is a byte layout plus a JSON description, and loading one only ever reads
numbers into arrays:

    offset 0       MAGIC (8 bytes), format version (uint32 LE), reserved (uint32 LE, 0)
    offset 64 ...  data blobs, each starting 64-byte aligned: C-order little-endian tensor values, bytes objects
    after them     the header: UTF-8 JSON ``{"tensors": [record, ...], "root": node}``
    last 28 bytes  footer: header offset (uint64 LE), header length (uint64 LE), header CRC-32 (uint32 LE),
                   END_MAGIC (8 bytes)

The header goes last so that tensors stream out one at a time (a GPU state dict never needs a second,
host-side copy of itself) with their CRC-32s known by the time the header is written, and so that a
truncated file is recognisable by its missing end marker.

Nodes of the object tree: JSON null, booleans, integers, finite floats, strings and arrays stand for
themselves (a JSON array is a Python list); everything else is an object tagged with ``"$"``:
``tuple`` and ``dict``/``odict`` (key/value pairs, so keys keep their types: optimizer state has int keys),
``float`` (nan and infinities), ``bytes`` and ``tensor`` (an index into ``tensors``, so one tensor object
saved twice loads as one tensor object). A tensor record gives dtype, shape, saved device, requires_grad,
whether it was an ``nn.Parameter``, and the offset, length and CRC-32 of its bytes.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import secrets
import stat
import struct
import sys
import zlib
from collections import OrderedDict
from typing import Any, Callable

import ml_dtypes  # also registers "bfloat16" with NumPy, which safetensors' NumPy reader relies on
import numpy as np

from .dispatch import registry
from .dispatch.device import device as Device
from .dispatch.dtypes import ALL_DTYPES, bool_, dtype as DType
from .dispatch.errors import DeviceError, DtypeError, EmberError
from .tensor import Tensor, wrap

__all__ = ["CheckpointError", "save", "load", "save_safetensors", "load_safetensors", "rebuild_tensor"]

MAGIC = b"\x89EMBER\r\n"  # the \r\n and the high byte show up damage from text-mode transfers
END_MAGIC = b"EMBEREND"
FORMAT_VERSION = 1
ALIGNMENT = 64
MAX_HEADER_BYTES = 256 * 2 ** 20  # refuse to read more JSON than this before anything is validated
_HEAD = struct.Struct("<8sII")
_FOOTER = struct.Struct("<QQI8s")
_BIG_ENDIAN = sys.byteorder == "big"

_DTYPES = {d.name: d for d in ALL_DTYPES}
_NUMPY = {d: np.dtype(ml_dtypes.bfloat16) if d.name == "bfloat16" else np.dtype(d.name) for d in ALL_DTYPES}
_SUPPORTED = "tensors, dict, OrderedDict, list, tuple, str, bytes, int, float, bool and None"


class CheckpointError(EmberError, ValueError):
    """A file that is not a well-formed checkpoint; raised instead of guessing, and instead of running it."""


# -- paths inside the object tree, for error messages ---------------------------------------------------

class _Step:
    """A path step that is not a plain subscript (an attribute, a dict key itself)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_AS_KEY = _Step(" (as a dict key)")


def _format_path(path: tuple) -> str:
    """``obj['layers'][2]``: built only when an error needs it, so saving stays cheap."""
    return "obj" + "".join(step.text if isinstance(step, _Step) else f"[{step!r}]" for step in path)


def _type_name(kind: type) -> str:
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


# -- saving ---------------------------------------------------------------------------------------------

class _Encoder:
    """Pass one of ``save``: the object tree as JSON nodes, plus the blobs to write, without any I/O.

    Everything that can be refused (an unsupported type, a reference cycle) is refused here, before a
    single byte is written, so a failed save never leaves half a file in a caller's stream.
    """

    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self.blobs: list[tuple[dict, Any]] = []  # (record to fill with offset/nbytes/crc32, Tensor or bytes)
        self._tensor_index: dict[int, int] = {}  # id(tensor) -> index; blobs keep the tensors alive
        self._open: set[int] = set()  # containers on the current path, to catch cycles

    def encode(self, obj, path: tuple):
        kind = type(obj)
        if obj is None or kind is bool or kind is int or kind is str:
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {"$": "float", "value": repr(obj)}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "index": self._tensor(obj)}
        if kind is bytes:
            node = {"$": "bytes"}
            self.blobs.append((node, obj))
            return node
        if kind in (list, tuple, dict, OrderedDict):
            return self._container(obj, kind, path)
        hint = "; convert NumPy arrays with ember.tensor(...)" if isinstance(obj, (np.ndarray, np.generic)) else ""
        raise TypeError(f"ember.save: cannot save an object of type {_type_name(kind)} at {_format_path(path)}; "
                        f"checkpoints hold {_SUPPORTED}{hint}")

    def _container(self, obj, kind: type, path: tuple):
        if id(obj) in self._open:
            raise ValueError(f"ember.save: {_format_path(path)} contains itself; checkpoints hold trees, "
                             f"not reference cycles")
        self._open.add(id(obj))
        try:
            if kind is list:
                return [self.encode(x, path + (i,)) for i, x in enumerate(obj)]
            if kind is tuple:
                return {"$": "tuple", "items": [self.encode(x, path + (i,)) for i, x in enumerate(obj)]}
            return self._mapping(obj, kind, path)
        finally:
            self._open.discard(id(obj))

    def _mapping(self, obj: dict, kind: type, path: tuple) -> dict:
        items = [[self.encode(k, path + (k, _AS_KEY)), self.encode(v, path + (k,))] for k, v in obj.items()]
        if kind is dict:
            return {"$": "dict", "items": items}
        node = {"$": "odict", "items": items}
        attrs = vars(obj)  # nn.Module.state_dict() keeps version information in ``_metadata``
        if attrs:
            node["attrs"] = {name: self.encode(v, path + (_Step(f".{name}"),)) for name, v in attrs.items()}
        return node

    def _tensor(self, t: Tensor) -> int:
        index = self._tensor_index.get(id(t))
        if index is None:
            index = self._tensor_index[id(t)] = len(self.tensors)
            record = {"dtype": t.dtype.name, "shape": list(t.shape), "device": str(t.device),
                      "requires_grad": bool(t.requires_grad)}
            if _is_parameter(t):
                record["parameter"] = True
            self.tensors.append(record)
            self.blobs.append((record, t))
        return index


def _is_parameter(t: Tensor) -> bool:
    """No tensor can be a Parameter before ``ember.nn.parameter`` is imported, so never import it here."""
    parameter = getattr(sys.modules.get("ember.nn.parameter"), "Parameter", None)
    return parameter is not None and isinstance(t, parameter)


def _c_order(array: np.ndarray) -> np.ndarray:
    """``array`` itself when already C-contiguous (no copy for CPU tensors); 0-d stays 0-d."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def _host_values(t: Tensor) -> np.ndarray:
    """The tensor's own values in C order on the host; a view contributes only the elements it shows."""
    array = np.asarray(t._host())
    if array.dtype != _NUMPY[t.dtype]:
        array = array.astype(_NUMPY[t.dtype])
    return _c_order(array)


def _le_bytes(array: np.ndarray) -> memoryview:
    """The on-disk form: C-order little-endian bytes, whatever the host's byte order."""
    size = array.dtype.itemsize
    if _BIG_ENDIAN and size > 1:
        array = array.view(f"u{size}").astype(f"<u{size}")
    return memoryview(array.reshape(-1).view(np.uint8))


class _Sink:
    """A write-only stream that tracks its own position, so pipes and sockets work as targets too."""

    def __init__(self, out) -> None:
        self.out = out
        self.position = 0

    def write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            written = self.out.write(view)
            written = view.nbytes if written is None else written  # some file-likes return None
            view = view[written:]
            self.position += written

    def align(self) -> None:
        self.write(bytes(-self.position % ALIGNMENT))


def _write_checkpoint(root, encoder: _Encoder, out) -> None:
    """Pass two of ``save``: stream blobs one at a time, then the header and the footer."""
    sink = _Sink(out)
    sink.write(_HEAD.pack(MAGIC, FORMAT_VERSION, 0))
    for record, source in encoder.blobs:
        data = _le_bytes(_host_values(source)) if isinstance(source, Tensor) else memoryview(source)
        sink.align()
        record.update(offset=sink.position, nbytes=data.nbytes, crc32=zlib.crc32(data))
        sink.write(data)
    header = json.dumps({"tensors": encoder.tensors, "root": root}, allow_nan=False,
                        separators=(",", ":")).encode("ascii")
    header_offset = sink.position
    sink.write(header)
    sink.write(_FOOTER.pack(header_offset, len(header), zlib.crc32(header), END_MAGIC))


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


@contextlib.contextmanager
def _atomic_path(path):
    """Yield a fresh temporary path beside ``path``; once the body has written it, fsync it and rename
    it over ``path``.

    The rename is atomic, so readers (and a crash at any moment) see either the old file or the
    complete new one. On an exception the temporary file is removed; after a SIGKILL it stays behind as
    ``.NAME.*.tmp`` next to an intact ``NAME``. Symlinks are written through, as ``open(path, "wb")`` would.
    """
    target = os.path.realpath(os.fsdecode(os.fspath(path)))
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        yield temp
        _fsync_file(temp)
        _copy_permissions(target, temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_permissions(target: str, temp: str) -> None:
    """Overwriting a checkpoint keeps its mode; a new one gets open()'s default (0o666 less the umask)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable; some platforms and file systems cannot, which is fine."""
    flag = getattr(os, "O_DIRECTORY", None)
    if flag is None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | flag)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def save(obj, f) -> None:
    """Write ``obj`` (tensors in nested dicts, lists, tuples, numbers, strings, bytes) to a path or a
    binary file object.

    Tensors are stored as their own values in C order, whichever device they are on and whether or not
    they are views; the same tensor object stored twice is written once. A path is replaced atomically:
    a failure at any point leaves the previous file as it was. Unsupported objects raise ``TypeError``
    naming the type and where it sits (``obj['layers'][2]``) before anything is written.
    """
    encoder = _Encoder()
    root = encoder.encode(obj, ())
    if _is_path(f):
        with _atomic_path(f) as temp, open(temp, "xb") as out:
            _write_checkpoint(root, encoder, out)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {_type_name(type(f))}")
    _write_checkpoint(root, encoder, f)
    if hasattr(f, "flush"):
        f.flush()


# -- loading --------------------------------------------------------------------------------------------

class _Source:
    """Bounds-checked random access to one checkpoint inside a binary stream."""

    def __init__(self, stream) -> None:
        if isinstance(stream, io.TextIOBase):
            raise TypeError("ember.load: the file is open in text mode; open it in binary mode ('rb')")
        if not (hasattr(stream, "seekable") and stream.seekable()):
            stream = io.BytesIO(stream.read())  # a pipe or socket: the footer is at the end
        self.stream = stream
        self.base = stream.tell()
        self.size = stream.seek(0, os.SEEK_END) - self.base

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes at ``offset`` as a fresh, writable uint8 array the caller owns."""
        buffer = np.empty(nbytes, np.uint8)
        view = memoryview(buffer)
        self.stream.seek(self.base + offset)
        readinto = getattr(self.stream, "readinto", None)
        filled = 0
        while filled < nbytes:
            if readinto is not None:
                count = readinto(view[filled:])
            else:
                chunk = self.stream.read(nbytes - filled)
                count = len(chunk)
                view[filled:filled + count] = chunk
            if not count:
                raise CheckpointError(f"the file ends at byte {self.base + offset + filled}, inside data "
                                      f"that should run to byte {self.base + offset + nbytes}: it is truncated")
            filled += count
        return buffer


def _refuse_foreign(head: bytes, tail: bytes) -> CheckpointError:
    """Name what the file seems to be instead, so that the user knows what to do with it."""
    if _looks_like_pickle(head, tail):
        return CheckpointError("this is a Python pickle (perhaps a legacy torch.save file); ember.load does not "
                               "load pickles because unpickling can run arbitrary code")
    if head[:4] == b"PK\x03\x04":
        return CheckpointError("this is a zip archive, probably a PyTorch torch.save file, whose object tree is a "
                               "pickle; ember.load does not load pickles because unpickling can run arbitrary "
                               "code. Convert it where you trust it, e.g. with safetensors, and use "
                               "ember.serialization.load_safetensors")
    if len(head) >= 9 and head[8:9] == b"{":
        return CheckpointError("this looks like a safetensors file; load it with "
                               "ember.serialization.load_safetensors")
    if len(head) < _HEAD.size:
        return CheckpointError(f"the file is only {len(head)} bytes long, too short for an Ember checkpoint "
                               f"(truncated?)")
    return CheckpointError(f"not an Ember checkpoint: it starts with {head[:8]!r}, expected {MAGIC!r}")


def _looks_like_pickle(head: bytes, tail: bytes) -> bool:
    """Protocol 2+ pickles start with PROTO (0x80, version); protocol 0/1 ones start with an opcode and end
    with STOP ('.'). Only used to word the refusal: whatever the file is, it is never unpickled."""
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    return tail == b"." and head[:1] in (b"(", b"]", b"}", b"c", b"I", b"L", b"F", b"S", b"V", b"N", b"i", b")")


def _read_header(source: _Source) -> dict:
    """The footer, then the header JSON, each checked before the next read trusts it."""
    head = bytes(source.read(0, min(_HEAD.size, source.size)))
    tail = bytes(source.read(source.size - 1, 1)) if source.size else b""
    if len(head) < _HEAD.size or head[:8] != MAGIC:
        raise _refuse_foreign(head, tail)
    _, version, _ = _HEAD.unpack(head)
    if version != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint format version {version}; this Ember reads version {FORMAT_VERSION} "
                              f"(was it written by a newer Ember?)")
    if source.size < _HEAD.size + _FOOTER.size:
        raise CheckpointError("the file is truncated: it ends before its footer")
    header_offset, header_len, header_crc, end = _FOOTER.unpack(bytes(source.read(source.size - _FOOTER.size,
                                                                                   _FOOTER.size)))
    if end != END_MAGIC:
        raise CheckpointError("the file has no end marker: it is truncated (an interrupted write?) or damaged")
    if header_len > MAX_HEADER_BYTES:
        raise CheckpointError(f"header too large: {header_len} bytes, limit {MAX_HEADER_BYTES} "
                              f"(ember.serialization.MAX_HEADER_BYTES)")
    if header_offset < _HEAD.size or header_offset + header_len + _FOOTER.size != source.size:
        raise CheckpointError(f"the footer places the header at bytes {header_offset}..{header_offset + header_len}, "
                              f"which does not fit a file of {source.size} bytes: it is truncated or damaged")
    raw = source.read(header_offset, header_len)
    if zlib.crc32(raw) != header_crc:
        raise CheckpointError("the header fails its CRC-32 check: the file is damaged")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"the header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("tensors"), list) or "root" not in header:
        raise CheckpointError("the header lacks its 'tensors' list or its 'root'")
    header["data_end"] = header_offset
    return header


def _is_int(value) -> bool:
    return type(value) is int


def _check_extent(node: dict, data_end: int, what: str) -> tuple[int, int, int]:
    """``(offset, nbytes, crc32)`` of a blob, checked to lie inside the data area."""
    offset, nbytes, crc = node.get("offset"), node.get("nbytes"), node.get("crc32")
    if not (_is_int(offset) and _is_int(nbytes) and _is_int(crc)):
        raise CheckpointError(f"{what} lacks an integer offset, nbytes or crc32")
    if offset < _HEAD.size or nbytes < 0 or offset + nbytes > data_end:
        raise CheckpointError(f"{what}: bytes {offset}..{offset + nbytes} are out of range "
                              f"(data lies in {_HEAD.size}..{data_end})")
    return offset, nbytes, crc


class _TensorRecord:
    """One validated entry of the header's ``tensors`` list."""

    __slots__ = ("dtype", "shape", "device", "requires_grad", "parameter", "offset", "nbytes", "crc32")

    def __init__(self, index: int, raw, data_end: int) -> None:
        what = f"tensor #{index}"
        if not isinstance(raw, dict):
            raise CheckpointError(f"{what} is not a JSON object")
        self.dtype = _DTYPES.get(raw.get("dtype")) if isinstance(raw.get("dtype"), str) else None
        if self.dtype is None:
            raise CheckpointError(f"{what} has unknown dtype {raw.get('dtype')!r}; known: {', '.join(_DTYPES)}")
        shape = raw.get("shape")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise CheckpointError(f"{what} has an invalid shape {shape!r}")
        self.shape = tuple(shape)
        self.device = raw.get("device")
        try:
            Device(self.device)
        except (DeviceError, TypeError):
            raise CheckpointError(f"{what} has an invalid device {self.device!r}") from None
        self.requires_grad, self.parameter = raw.get("requires_grad"), raw.get("parameter", False)
        if type(self.requires_grad) is not bool or type(self.parameter) is not bool:
            raise CheckpointError(f"{what} has a non-boolean requires_grad or parameter flag")
        if self.requires_grad and not self.dtype.is_floating_point:
            raise CheckpointError(f"{what} is {self.dtype.name} but claims requires_grad")
        self.offset, self.nbytes, self.crc32 = _check_extent(raw, data_end, what)
        expected = math.prod(self.shape) * self.dtype.itemsize
        if self.nbytes != expected:
            raise CheckpointError(f"{what} holds {self.nbytes} bytes, but shape {list(self.shape)} of "
                                  f"{self.dtype.name} needs {expected}")


def _map_rule(map_location) -> Callable[[str], Any]:
    """``map_location`` as a function from a saved device string to a device spec."""
    if map_location is None:
        return lambda saved: saved
    if isinstance(map_location, (str, Device)):
        return lambda saved: map_location
    if isinstance(map_location, dict):
        table = {str(key): value for key, value in map_location.items()}
        return lambda saved: table.get(saved, table.get(saved.partition(":")[0], saved))
    if callable(map_location):
        return lambda saved: _or(map_location(saved), saved)
    raise TypeError(f"ember.load: map_location must be None, a device, a dict or a callable, "
                    f"got {_type_name(type(map_location))}")


def _or(value, default):
    return default if value is None else value


class _DeviceMap:
    """Resolves each saved device to an available one once per load, with errors that say what to do."""

    def __init__(self, map_location) -> None:
        self.map_location = map_location
        self._rule = _map_rule(map_location)
        self._resolved: dict[str, Device] = {}

    def __call__(self, saved: str, path: tuple) -> Device:
        target = self._resolved.get(saved)
        if target is None:
            target = self._resolved[saved] = self._resolve(saved, path)
        return target

    def _resolve(self, saved: str, path: tuple) -> Device:
        spec = self._rule(saved)
        try:
            return registry.resolve_device(spec)
        except (DeviceError, TypeError) as exc:
            if self.map_location is None:
                raise DeviceError(f"ember.load: the tensor at {_format_path(path)} was saved on {saved}, which is "
                                  f"not available here ({exc}); pass map_location='cpu' (or a device, a dict "
                                  f"{{saved: target}} or a callable) to load it elsewhere") from None
            raise DeviceError(f"ember.load: map_location sends tensors saved on {saved} to {spec!r}, which is "
                              f"not available ({exc})") from None


def _make_tensor(array: np.ndarray, dt: DType, dev: Device, requires_grad: bool = False) -> Tensor:
    """A tensor on ``dev`` from a host array the caller hands over (no copy on CPU)."""
    backend = registry.get_backend(dev.type)
    if dt not in backend.supported_dtypes(dev.index):
        raise DtypeError(f"{dev} does not support {dt.name}")
    out = wrap(backend.from_numpy(array, dt, dev.index), dt, dev)
    if requires_grad:
        out.requires_grad = True
    return out


def _from_le_bytes(buffer: np.ndarray, dt: DType, shape: tuple) -> np.ndarray:
    size = dt.itemsize
    if _BIG_ENDIAN and size > 1:
        buffer = buffer.view(f"<u{size}").astype(f"=u{size}")
    if dt is bool_:
        return (buffer != 0).reshape(shape)  # a byte other than 0/1 must not become a strange bool
    return buffer.view(_NUMPY[dt]).reshape(shape)


class _Decoder:
    """Rebuilds the object tree from header nodes; only the tags below exist, so nothing else can happen."""

    def __init__(self, source: _Source, header: dict, devices: _DeviceMap) -> None:
        self.source = source
        self.data_end = header["data_end"]
        self.records = [_TensorRecord(i, raw, self.data_end) for i, raw in enumerate(header["tensors"])]
        self.devices = devices
        self.loaded: dict[int, Tensor] = {}
        self.tags = {"tuple": self._tuple, "dict": self._dict, "odict": self._dict, "float": self._float,
                     "bytes": self._bytes, "tensor": self._tensor}

    def decode(self, node, path: tuple):
        kind = type(node)
        if kind is list:
            return [self.decode(x, path + (i,)) for i, x in enumerate(node)]
        if kind is dict:
            tag = node.get("$")
            handler = self.tags.get(tag) if isinstance(tag, str) else None
            if handler is None:
                raise CheckpointError(f"unknown node type {tag!r} at {_format_path(path)}")
            return handler(node, path)
        return node  # JSON null, bool, number or string

    def _items(self, node: dict, path: tuple) -> list:
        items = node.get("items")
        if not isinstance(items, list):
            raise CheckpointError(f"the {node['$']} at {_format_path(path)} lacks its 'items' list")
        return items

    def _tuple(self, node: dict, path: tuple) -> tuple:
        return tuple(self.decode(x, path + (i,)) for i, x in enumerate(self._items(node, path)))

    def _dict(self, node: dict, path: tuple) -> dict:
        out = {} if node["$"] == "dict" else OrderedDict()
        for pair in self._items(node, path):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise CheckpointError(f"the {node['$']} at {_format_path(path)} has an item that is not a "
                                      f"[key, value] pair")
            key = self.decode(pair[0], path + (_AS_KEY,))
            try:
                hash(key)
            except TypeError:
                raise CheckpointError(f"the {node['$']} at {_format_path(path)} has an unhashable key "
                                      f"of type {_type_name(type(key))}") from None
            out[key] = self.decode(pair[1], path + (key,))
        for name, value in self._attrs(node, path).items():
            setattr(out, name, self.decode(value, path + (_Step(f".{name}"),)))
        return out

    def _attrs(self, node: dict, path: tuple) -> dict:
        attrs = node.get("attrs", {}) if node["$"] == "odict" else {}
        if not isinstance(attrs, dict) or not all(n.isidentifier() and not n.startswith("__") for n in attrs):
            raise CheckpointError(f"the odict at {_format_path(path)} has invalid attributes")
        return attrs

    def _float(self, node: dict, path: tuple) -> float:
        value = node.get("value")
        if value not in ("nan", "inf", "-inf"):
            raise CheckpointError(f"invalid special float {value!r} at {_format_path(path)}")
        return float(value)

    def _bytes(self, node: dict, path: tuple) -> bytes:
        offset, nbytes, crc = _check_extent(node, self.data_end, f"the bytes at {_format_path(path)}")
        return self._read(offset, nbytes, crc, path).tobytes()

    def _read(self, offset: int, nbytes: int, crc: int, path: tuple) -> np.ndarray:
        buffer = self.source.read(offset, nbytes)
        if zlib.crc32(buffer) != crc:
            raise CheckpointError(f"the data of {_format_path(path)} fails its CRC-32 check: the file is damaged")
        return buffer

    def _tensor(self, node: dict, path: tuple) -> Tensor:
        index = node.get("index")
        if not (_is_int(index) and 0 <= index < len(self.records)):
            raise CheckpointError(f"the tensor at {_format_path(path)} refers to tensor #{index!r}, "
                                  f"but the file has {len(self.records)}")
        out = self.loaded.get(index)
        if out is None:
            out = self.loaded[index] = self._load_tensor(self.records[index], path)
        return out

    def _load_tensor(self, record: _TensorRecord, path: tuple) -> Tensor:
        target = self.devices(record.device, path)
        array = _from_le_bytes(self._read(record.offset, record.nbytes, record.crc32, path), record.dtype,
                               record.shape)
        try:
            out = _make_tensor(array, record.dtype, target, record.requires_grad)
        except DtypeError as exc:
            raise DtypeError(f"ember.load: the tensor at {_format_path(path)}: {exc}; pick another device with "
                             f"map_location") from None
        if record.parameter:
            from .nn.parameter import Parameter
            out = Parameter(out, requires_grad=record.requires_grad)
        return out


def load(f, map_location=None, weights_only: bool = True):
    """Read what ``ember.save`` wrote, from a path or a binary file object.

    ``map_location`` chooses where tensors go: None (the device each was saved on, which must be
    available), a device or device string, a dict ``{saved: target}`` (keys like ``"cuda:1"`` or a bare
    type ``"cuda"``; unmatched devices stay), or a callable taking the saved device string and returning a
    target (None: keep). ``weights_only`` exists for PyTorch compatibility: this format holds only data,
    so it never runs code whichever value is passed. Anything malformed raises ``CheckpointError``,
    and so does a pickle or ``torch.save`` file, which is never unpickled.
    """
    devices = _DeviceMap(map_location)
    if _is_path(f):
        with open(f, "rb") as stream:
            return _load_stream(stream, devices)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got {_type_name(type(f))}")
    return _load_stream(f, devices)


def _load_stream(stream, devices: _DeviceMap):
    source = _Source(stream)
    header = _read_header(source)
    try:
        result = _Decoder(source, header, devices).decode(header["root"], ())
    except RecursionError:
        raise CheckpointError("the object tree is nested too deeply to load") from None
    source.stream.seek(source.base + source.size)  # leave the stream after the checkpoint, as a read would
    return result


# -- safetensors ----------------------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {"BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64"}


def save_safetensors(tensors: dict, path, metadata: dict | None = None) -> None:
    """Write ``{name: tensor}`` as a safetensors file (atomically), readable by ``safetensors.torch`` and others."""
    from safetensors.numpy import save_file
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors: expected a dict of tensors, got {_type_name(type(tensors))}")
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: expected str names and tensors, got {name!r}: {_type_name(type(t))}")
        arrays[name] = _host_values(t)  # safetensors reads raw memory, so it must be C-contiguous
    with _atomic_path(path) as temp:
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
                out[name] = _make_tensor(array, _DTYPES[array.dtype.name], dev)
    except SafetensorError as exc:
        raise CheckpointError(f"load_safetensors: {os.fspath(path)} is not a valid safetensors file: {exc}") from None
    return out


# -- pickling, for DataLoader workers (never for checkpoints) ---------------------------------------------

def rebuild_tensor(array, dtype_name: str, device_str: str, requires_grad: bool) -> Tensor:
    """Unpickle a tensor that ``Tensor.__reduce_ex__`` reduced to a host array, on its device."""
    dt = _DTYPES.get(dtype_name)
    if dt is None:
        raise TypeError(f"rebuild_tensor: unknown dtype {dtype_name!r}")
    array = np.asarray(array)
    if array.dtype != _NUMPY[dt]:
        array = array.astype(_NUMPY[dt])
    return _make_tensor(array, dt, registry.resolve_device(device_str), requires_grad)
