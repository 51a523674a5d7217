"""Reading an Ember checkpoint (layout in ``ember_format``): every header field is validated before it is
trusted, every blob is CRC-checked, and the pickle of objects goes through ``weights_only``'s allow list."""
from __future__ import annotations

import json
import math
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import bool_, dtype as DType
from ..dispatch.schema.errors import DeviceError, DtypeError
from ..tensor import Tensor
from .ember_format import FOOTER, HEAD, READABLE_VERSIONS, END_MAGIC, array_dtype, max_header_bytes
from .containers import check_attributes, check_plain
from .errors import CheckpointError, UnpicklingError
from .safe_globals import BUILTIN_SAFE, allowed, refusal, unpickle
from .tensors import AS_KEY, BIG_ENDIAN, DTYPES, NUMPY, DeviceMap, Step, checked_shape, format_path, make_tensor, \
    type_name


def check_head(head: bytes) -> None:
    """Refuse a format version this Ember cannot read, from the first bytes alone (a stream ends there)."""
    _, version, _ = HEAD.unpack(head[:HEAD.size])
    if version not in READABLE_VERSIONS:
        raise CheckpointError(f"checkpoint format version {version}; this Ember reads versions "
                              f"{', '.join(map(str, READABLE_VERSIONS))} (was it written by a newer Ember?)")


def read_header(source) -> dict:
    """The footer, then the header JSON, each checked before the next read trusts it."""
    check_head(bytes(source.read(0, HEAD.size)))
    if source.size < HEAD.size + FOOTER.size:
        raise CheckpointError("the file is truncated: it ends before its footer")
    header_offset, header_len, header_crc, end = FOOTER.unpack(bytes(source.read(source.size - FOOTER.size,
                                                                                  FOOTER.size)))
    if end != END_MAGIC:
        raise CheckpointError("the file has no end marker: it is truncated (an interrupted write?) or damaged")
    limit = max_header_bytes()
    if header_len > limit:
        raise CheckpointError(f"header too large: {header_len} bytes, limit {limit} "
                              f"(ember.serialization.MAX_HEADER_BYTES)")
    if header_offset < HEAD.size or header_offset + header_len + FOOTER.size != source.size:
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
    if not isinstance(header.get("arrays", []), list) or not isinstance(header.get("objects", {}), dict):
        raise CheckpointError("the header's 'arrays' is not a list or its 'objects' is not a JSON object")
    header["data_end"] = header_offset
    return header


def _is_int(value) -> bool:
    return type(value) is int


def _check_extent(node: dict, data_end: int, what: str) -> tuple[int, int, int]:
    """``(offset, nbytes, crc32)`` of a blob, checked to lie inside the data area."""
    offset, nbytes, crc = node.get("offset"), node.get("nbytes"), node.get("crc32")
    if not (_is_int(offset) and _is_int(nbytes) and _is_int(crc)):
        raise CheckpointError(f"{what} lacks an integer offset, nbytes or crc32")
    if offset < HEAD.size or nbytes < 0 or offset + nbytes > data_end:
        raise CheckpointError(f"{what}: bytes {offset}..{offset + nbytes} are out of range "
                              f"(data lies in {HEAD.size}..{data_end})")
    return offset, nbytes, crc


def _check_size(nbytes: int, shape: tuple, itemsize: int, dtype_name: str, what: str) -> None:
    expected = math.prod(shape) * itemsize
    if nbytes != expected:
        raise CheckpointError(f"{what} holds {nbytes} bytes, but shape {list(shape)} of {dtype_name} needs {expected}")


class _TensorRecord:
    """One validated entry of the header's ``tensors`` list."""

    __slots__ = ("dtype", "shape", "device", "requires_grad", "parameter", "offset", "nbytes", "crc32")

    def __init__(self, index: int, raw, data_end: int) -> None:
        what = f"tensor #{index}"
        if not isinstance(raw, dict):
            raise CheckpointError(f"{what} is not a JSON object")
        self.dtype = DTYPES.get(raw.get("dtype")) if isinstance(raw.get("dtype"), str) else None
        if self.dtype is None:
            raise CheckpointError(f"{what} has unknown dtype {raw.get('dtype')!r}; known: {', '.join(DTYPES)}")
        self.shape = checked_shape(raw.get("shape"), self.dtype.itemsize, what)
        self.device = raw.get("device")
        try:
            Device(self.device)
        except (DeviceError, TypeError):
            raise CheckpointError(f"{what} has an invalid device {self.device!r}") from None
        self.requires_grad, self.parameter = raw.get("requires_grad"), raw.get("parameter", False)
        if type(self.requires_grad) is not bool or type(self.parameter) is not bool:
            raise CheckpointError(f"{what} has a non-boolean requires_grad or parameter flag")
        if self.requires_grad and not self.dtype.is_inexact:
            raise CheckpointError(f"{what} is {self.dtype.name} but claims requires_grad")
        self.offset, self.nbytes, self.crc32 = _check_extent(raw, data_end, what)
        _check_size(self.nbytes, self.shape, self.dtype.itemsize, self.dtype.name, what)


class _ArrayRecord:
    """One validated entry of the header's ``arrays`` list."""

    __slots__ = ("dtype", "shape", "scalar", "offset", "nbytes", "crc32")

    def __init__(self, index: int, raw, data_end: int) -> None:
        what = f"NumPy array #{index}"
        if not isinstance(raw, dict):
            raise CheckpointError(f"{what} is not a JSON object")
        self.dtype = array_dtype(raw.get("dtype"))
        if self.dtype is None:
            raise CheckpointError(f"{what} has an unsupported dtype {raw.get('dtype')!r}")
        self.shape = checked_shape(raw.get("shape"), self.dtype.itemsize, what)
        self.scalar = raw.get("scalar", False)
        if type(self.scalar) is not bool or (self.scalar and self.shape):
            raise CheckpointError(f"{what} has an invalid scalar flag")
        self.offset, self.nbytes, self.crc32 = _check_extent(raw, data_end, what)
        _check_size(self.nbytes, self.shape, self.dtype.itemsize, str(self.dtype), what)


def _from_le_bytes(buffer: np.ndarray, dt: DType, shape: tuple, what) -> np.ndarray:
    size = dt.itemsize
    if BIG_ENDIAN and size > 1:
        buffer = buffer.view(f"<u{size}").astype(f"=u{size}")
    if dt is bool_:
        _check_bools(buffer, what)
    return buffer.view(NUMPY[dt]).reshape(shape)


def _check_bools(buffer: np.ndarray, what) -> None:
    """ember.save writes bools as bytes 0 and 1; any other byte would become a strange bool, so it is damage."""
    if buffer.size and buffer.max() > 1:
        raise CheckpointError(f"the bool data of {format_path(what)} holds byte values other than 0 and 1: "
                              f"the file is damaged")


class Decoder:
    """Rebuilds the object tree from header nodes; only the tags below exist, and the pickle of objects is
    unpickled only when the tree refers to it, through ``weights_only``'s allow list unless the caller opted out."""

    def __init__(self, source, header: dict, devices: DeviceMap, weights_only: bool) -> None:
        self.source = source
        self.data_end = header["data_end"]
        self.records = [_TensorRecord(i, raw, self.data_end) for i, raw in enumerate(header["tensors"])]
        self.array_records = [_ArrayRecord(i, raw, self.data_end) for i, raw in enumerate(header.get("arrays", []))]
        self.objects_node = header.get("objects")
        self.devices = devices
        self.weights_only = weights_only
        self.loaded: dict[int, Tensor] = {}
        self.loaded_arrays: dict[int, Any] = {}
        self.objects: list | None = None
        self.blobs: dict[tuple[int, int], tuple[np.ndarray, int]] = {}  # (offset, nbytes) -> (bytes read, crc32)
        self.blob_bytes: dict[tuple[int, int], tuple[bytes, int]] = {}
        self.bytes_read = 0
        self.tags = {"tuple": self._tuple, "dict": self._dict, "odict": self._dict, "float": self._float,
                     "bytes": self._bytes, "tensor": self._tensor, "ndarray": self._ndarray,
                     "object": self._object, "sparse": self._sparse}

    def decode(self, node, path: tuple):
        kind = type(node)
        if kind is list:
            return [self.decode(x, path + (i,)) for i, x in enumerate(node)]
        if kind is dict:
            tag = node.get("$")
            handler = self.tags.get(tag) if isinstance(tag, str) else None
            if handler is None:
                raise CheckpointError(f"unknown node type {tag!r} at {format_path(path)}")
            return handler(node, path)
        return node  # JSON null, bool, number or string

    def _items(self, node: dict, path: tuple) -> list:
        items = node.get("items")
        if not isinstance(items, list):
            raise CheckpointError(f"the {node['$']} at {format_path(path)} lacks its 'items' list")
        return items

    def _tuple(self, node: dict, path: tuple) -> tuple:
        return tuple(self.decode(x, path + (i,)) for i, x in enumerate(self._items(node, path)))

    def _dict(self, node: dict, path: tuple) -> dict:
        out = {} if node["$"] == "dict" else OrderedDict()
        for pair in self._items(node, path):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise CheckpointError(f"the {node['$']} at {format_path(path)} has an item that is not a "
                                      f"[key, value] pair")
            key = self.decode(pair[0], path + (AS_KEY,))
            try:
                hash(key)
            except TypeError:
                raise CheckpointError(f"the {node['$']} at {format_path(path)} has an unhashable key "
                                      f"of type {type_name(type(key))}") from None
            out[key] = self.decode(pair[1], path + (key,))
        for name, value in self._attrs(node, path).items():
            setattr(out, name, self.decode(value, path + (Step(f".{name}"),)))
        return out

    def _sparse(self, node: dict, path: tuple):
        """A sparse tensor (``ember.sparse``) from its layout, size, flags and component tensor records."""
        from ..sparse.serialization import rebuild
        components, size = node.get("components"), node.get("size")
        if not isinstance(components, dict) or not isinstance(size, list) or not all(_is_int(s) for s in size):
            raise CheckpointError(f"the sparse tensor at {format_path(path)} lacks its size or components")
        parts = {name: self.decode(c, path + (Step(f".{name}"),)) for name, c in components.items()}
        try:
            return rebuild(node.get("layout"), tuple(size), parts, node.get("coalesced") is True,
                           node.get("requires_grad") is True)
        except ValueError as exc:
            raise CheckpointError(f"the sparse tensor at {format_path(path)}: {exc}") from None

    def _attrs(self, node: dict, path: tuple) -> dict:
        attrs = node.get("attrs", {}) if node["$"] == "odict" else {}
        if not isinstance(attrs, dict) or not all(n.isidentifier() and not n.startswith("__") for n in attrs):
            raise CheckpointError(f"the odict at {format_path(path)} has invalid attributes")
        check_attributes(OrderedDict, attrs, format_path(path))
        return attrs

    def _float(self, node: dict, path: tuple) -> float:
        value = node.get("value")
        if value not in ("nan", "inf", "-inf"):
            raise CheckpointError(f"invalid special float {value!r} at {format_path(path)}")
        return float(value)

    def _bytes(self, node: dict, path: tuple) -> bytes:
        return self._read_bytes(*_check_extent(node, self.data_end, f"the bytes at {format_path(path)}"), path)

    # Each blob is read once: records naming the same bytes share one buffer (views, as tensors over one
    # PyTorch storage do; bytes are immutable, so they share one object), and all the blobs read together
    # never exceed the file's data area, so records that overlap cannot make a small file take many times
    # its size in memory.

    def _read(self, offset: int, nbytes: int, crc: int, path) -> np.ndarray:
        """The blob at ``offset`` as a writable uint8 array."""
        return self._blob(self.blobs, self.source.read, offset, nbytes, crc, path)

    def _read_bytes(self, offset: int, nbytes: int, crc: int, path) -> bytes:
        """The blob at ``offset`` as bytes, read straight into one bytes object."""
        return self._blob(self.blob_bytes, self.source.read_bytes, offset, nbytes, crc, path)

    def _blob(self, cache: dict, read, offset: int, nbytes: int, crc: int, path):
        key = (offset, nbytes)
        if key not in cache:
            if self.bytes_read + nbytes > self.data_end:
                raise CheckpointError(f"the data of {format_path(path)} (bytes {offset}..{offset + nbytes}) overlaps "
                                      f"data already read: its records would take more memory than the file's "
                                      f"{self.data_end} bytes of data; the file is damaged or hostile")
            self.bytes_read += nbytes
            data = read(offset, nbytes)
            cache[key] = (data, zlib.crc32(data))
        data, actual = cache[key]
        if actual != crc:
            raise CheckpointError(f"the data of {format_path(path)} fails its CRC-32 check: the file is damaged")
        return data

    @staticmethod
    def _index(node: dict, count: int, what: str, path) -> int:
        index = node.get("index")
        if not (_is_int(index) and 0 <= index < count):
            raise CheckpointError(f"the {what} at {format_path(path)} refers to {what} #{index!r}, "
                                  f"but the file has {count}")
        return index

    def _tensor(self, node: dict, path) -> Tensor:
        return self.tensor_at(self._index(node, len(self.records), "tensor", path), path)

    def tensor_at(self, index: int, path) -> Tensor:
        out = self.loaded.get(index)
        if out is None:
            out = self.loaded[index] = self._load_tensor(self.records[index], path)
        return out

    def _load_tensor(self, record: _TensorRecord, path) -> Tensor:
        target = self.devices(record.device, path)
        array = _from_le_bytes(self._read(record.offset, record.nbytes, record.crc32, path), record.dtype,
                               record.shape, path)
        try:
            return make_tensor(array, record.dtype, target, record.requires_grad, record.parameter)
        except DtypeError as exc:
            raise DtypeError(f"ember.load: the tensor at {format_path(path)}: {exc}; pick another device with "
                             f"map_location") from None

    def _ndarray(self, node: dict, path):
        return self.array_at(self._index(node, len(self.array_records), "NumPy array", path), path)

    def array_at(self, index: int, path):
        if index not in self.loaded_arrays:
            record = self.array_records[index]
            buffer = self._read(record.offset, record.nbytes, record.crc32, path)
            if record.dtype.kind == "b":
                _check_bools(buffer, path)
            array = buffer.view(record.dtype).reshape(record.shape)
            self.loaded_arrays[index] = array[()] if record.scalar else array
        return self.loaded_arrays[index]

    def _object(self, node: dict, path):
        objects = self._unpickle_objects(path)
        return objects[self._index(node, len(objects), "object", path)]

    def pickled_bytes(self) -> bytes | None:
        """The pickle of objects, CRC-checked; None when the file has none."""
        if self.objects_node is None:
            return None
        extent = _check_extent(self.objects_node, self.data_end, "the pickled objects")
        return self._read_bytes(*extent, "the pickled objects")

    def _unpickle_objects(self, path) -> list:
        if self.objects is None:
            data = self.pickled_bytes()
            if data is None:
                raise CheckpointError(f"the object at {format_path(path)} refers to pickled objects, but the "
                                      f"file has none")
            objects = unpickle(data, self._find_global, self._persistent_load,
                               "the pickled objects of this checkpoint")
            if not isinstance(objects, list):
                raise CheckpointError("the pickled objects of this checkpoint are not a list")
            if self.weights_only:
                check_plain(objects, "in the pickled objects of this checkpoint")
            self.objects = objects
        return self.objects

    def _find_global(self, module: str, name: str, import_it):
        if not self.weights_only:
            return import_it(module, name)
        found = allowed(f"{module}.{name}", BUILTIN_SAFE)
        if found is None:
            raise refusal(f"{module}.{name}")
        return found

    def _persistent_load(self, pid):
        kind, index = pid if isinstance(pid, tuple) and len(pid) == 2 else (None, None)
        if kind == "tensor" and _is_int(index) and 0 <= index < len(self.records):
            return self.tensor_at(index, "a tensor inside a pickled object")
        if kind == "ndarray" and _is_int(index) and 0 <= index < len(self.array_records):
            return self.array_at(index, "a NumPy array inside a pickled object")
        raise UnpicklingError(f"the pickled objects refer to {pid!r}, which is not a tensor or array record "
                              f"of this file")
