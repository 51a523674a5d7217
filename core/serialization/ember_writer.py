"""Writing an Ember checkpoint (layout in ``ember_format``): encode the tree, pickle what JSON cannot hold,
then stream the blobs, the header and the footer."""
from __future__ import annotations

import io
import json
import math
import pickle
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from ..memory_format import strided
from ..tensor import Tensor
from .ember_format import ALIGNMENT, END_MAGIC, FOOTER, FORMAT_VERSION, HEAD, MAGIC, PICKLE_PROTOCOL, \
    array_dtype_code, is_data_array
from .safe_globals import pickle_globals
from .tensors import AS_KEY, BIG_ENDIAN, Step, c_order, format_path, host_values, is_parameter, type_name


class _Cycle(Exception):
    """A container met again inside itself: it is pickled whole instead (JSON holds trees only)."""

    def __init__(self, container_id: int) -> None:
        self.container_id = container_id


class Encoder:
    """Pass one of ``save``: the object tree as JSON nodes, the pickle, and the blobs to write, without I/O.

    Everything that can be refused (an object pickle cannot handle) is refused here, before a single byte
    is written, so a failed save never leaves half a file in a caller's stream.
    """

    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self.arrays: list[dict] = []
        self.objects: list = []
        self.object_paths: list[tuple] = []
        self.blobs: list[tuple[dict, Any]] = []  # (record to fill with offset/nbytes/crc32, Tensor/array/bytes)
        self._index: dict[int, int] = {}  # id(tensor/array/object) -> index; self.blobs/objects keep them alive
        self._open: set[int] = set()  # containers on the current path, to catch cycles

    def encode_root(self, obj) -> tuple[Any, dict]:
        """The root node and the header (less the blob positions, which writing fills in)."""
        root = self.encode(obj, ())
        header = {"tensors": self.tensors, "root": root}
        if self.objects:
            header["objects"] = self._pickle_objects()
        if self.arrays:
            header["arrays"] = self.arrays
        return root, header

    def encode(self, obj, path: tuple):
        kind = type(obj)
        if obj is None or kind is bool or kind is int or kind is str:
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {"$": "float", "value": repr(obj)}
        if isinstance(obj, Tensor) and obj.layout is not strided:
            return self._sparse(obj, path)
        if isinstance(obj, Tensor) and not _pickled_whole(obj):
            return {"$": "tensor", "index": self.tensor(obj)}
        if kind is bytes:
            node = {"$": "bytes"}
            self.blobs.append((node, obj))
            return node
        if kind in (list, tuple, dict, OrderedDict):
            return self._container(obj, kind, path)
        if is_data_array(obj):
            return {"$": "ndarray", "index": self.array(obj)}
        return {"$": "object", "index": self._object(obj, path)}

    def _container(self, obj, kind: type, path: tuple):
        if id(obj) in self._open:
            raise _Cycle(id(obj))
        self._open.add(id(obj))
        try:
            if kind is list:
                return [self.encode(x, path + (i,)) for i, x in enumerate(obj)]
            if kind is tuple:
                return {"$": "tuple", "items": [self.encode(x, path + (i,)) for i, x in enumerate(obj)]}
            return self._mapping(obj, kind, path)
        except _Cycle as cycle:
            if cycle.container_id != id(obj):
                raise
            return {"$": "object", "index": self._object(obj, path)}
        finally:
            self._open.discard(id(obj))

    def _mapping(self, obj: dict, kind: type, path: tuple) -> dict:
        items = [[self.encode(k, path + (k, AS_KEY)), self.encode(v, path + (k,))] for k, v in obj.items()]
        if kind is dict:
            return {"$": "dict", "items": items}
        node = {"$": "odict", "items": items}
        attrs = vars(obj)  # nn.Module.state_dict() keeps version information in ``_metadata``
        if attrs:
            node["attrs"] = {name: self.encode(v, path + (Step(f".{name}"),)) for name, v in attrs.items()}
        return node

    def _sparse(self, t: Tensor, path: tuple) -> dict:
        """A sparse tensor (``ember.sparse``): its layout, size and flags, and its dense components as tensors."""
        from ..sparse.serialization import parts
        node = parts(t)
        node["components"] = {name: {"$": "tensor", "index": self.tensor(c)} for name, c in node["components"].items()}
        return {"$": "sparse", **node}

    def tensor(self, t: Tensor) -> int:
        index = self._index.get(id(t))
        if index is None:
            index = self._index[id(t)] = len(self.tensors)
            record = {"dtype": t.dtype.name, "shape": list(t.shape), "device": str(t.device),
                      "requires_grad": bool(t.requires_grad)}
            if is_parameter(t):
                record["parameter"] = True
            self.tensors.append(record)
            self.blobs.append((record, t))
        return index

    def array(self, a) -> int:
        index = self._index.get(id(a))
        if index is None:
            index = self._index[id(a)] = len(self.arrays)
            values = c_order(np.asarray(a))
            record = {"dtype": array_dtype_code(values.dtype), "shape": list(values.shape)}
            if isinstance(a, np.generic):
                record["scalar"] = True
            self.arrays.append(record)
            self.blobs.append((record, (a, values)))  # ``a`` keeps its id from being reused
        return index

    def _object(self, obj, path: tuple) -> int:
        index = self._index.get(id(obj))
        if index is None:
            index = self._index[id(obj)] = len(self.objects)
            self.objects.append(obj)
            self.object_paths.append(path)
        return index

    def _pickle_objects(self) -> dict:
        """One pickle for all objects, so objects shared between them stay shared; tensors and arrays in it
        become persistent ids of their records."""
        try:
            data = self._dumps(self.objects)
        except Exception as exc:  # noqa: BLE001  (pickle raises PicklingError, TypeError, AttributeError...)
            raise self._pickling_error(exc) from exc
        node = {"count": len(self.objects), "globals": pickle_globals(data, "the pickle ember.save wrote")}
        self.blobs.append((node, data))
        return node

    def _dumps(self, obj) -> bytes:
        buffer = io.BytesIO()
        _Pickler(buffer, self).dump(obj)
        return buffer.getvalue()

    def _pickling_error(self, exc: Exception) -> TypeError:
        """Name the object that failed and where it sits, found by pickling each on its own."""
        for obj, path in zip(self.objects, self.object_paths):
            try:
                self._dumps(obj)
            except Exception as own:  # noqa: BLE001
                return TypeError(f"ember.save: cannot save the {type_name(type(obj))} at {format_path(path)}: "
                                 f"it cannot be pickled ({type(own).__name__}: {own})")
        return TypeError(f"ember.save: cannot pickle the objects to save ({type(exc).__name__}: {exc})")


class _Pickler(pickle.Pickler):
    """Tensors and data arrays inside pickled objects are stored as records, never pickled."""

    def __init__(self, stream, encoder: Encoder) -> None:
        super().__init__(stream, protocol=PICKLE_PROTOCOL)
        self.encoder = encoder

    def persistent_id(self, obj):
        if isinstance(obj, Tensor) and obj.layout is strided and not _pickled_whole(obj):
            return ("tensor", self.encoder.tensor(obj))  # a sparse tensor pickles as its components
        if is_data_array(obj):
            return ("ndarray", self.encoder.array(obj))
        return None


def _pickled_whole(t: Tensor) -> bool:
    """A tensor with no values to store yet (a lazy module's uninitialized parameter) pickles as its class."""
    return getattr(type(t), "saved_without_values", False)


def _le_bytes(array: np.ndarray) -> memoryview:
    """The on-disk form of tensor values: C-order little-endian bytes, whatever the host's byte order."""
    size = array.dtype.itemsize
    if BIG_ENDIAN and size > 1:
        array = array.view(f"u{size}").astype(f"<u{size}")
    return memoryview(array.reshape(-1).view(np.uint8))


def _blob_bytes(source) -> memoryview:
    if isinstance(source, Tensor):
        return _le_bytes(host_values(source))
    if isinstance(source, tuple):  # (array, its C-order values): the bytes as they are, byte order in the dtype
        return memoryview(source[1].reshape(-1).view(np.uint8))
    return memoryview(source)


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


def write_checkpoint(header: dict, encoder: Encoder, out) -> None:
    """Pass two of ``save``: stream blobs one at a time, then the header and the footer."""
    sink = _Sink(out)
    sink.write(HEAD.pack(MAGIC, FORMAT_VERSION, 0))
    for record, source in encoder.blobs:
        data = _blob_bytes(source)
        sink.align()
        record.update(offset=sink.position, nbytes=data.nbytes, crc32=zlib.crc32(data))
        sink.write(data)
    text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("ascii")
    header_offset = sink.position
    sink.write(text)
    sink.write(FOOTER.pack(header_offset, len(text), zlib.crc32(text), END_MAGIC))
