"""Reading ``torch.save`` files without torch: the zip format and the legacy (pre-1.6) pickle stream.

A PyTorch checkpoint is a pickle whose tensors are calls such as ``torch._utils._rebuild_tensor_v2(storage,
offset, size, stride, ...)`` and whose storages are persistent ids naming raw byte records. This reader
hands the pickle Ember functions under those torch names, so tensors come back as Ember tensors, and never
imports torch: every other ``torch.*`` name is refused, and so is any global ``weights_only`` does not allow.
Tensors over one storage are NumPy views of one buffer, so on the CPU they share memory as in PyTorch; on
other devices each tensor gets its own copy of the elements it shows.
"""
from __future__ import annotations

import math
import pickletools
import struct
import zipfile
import zlib
from typing import Any

import numpy as np

from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import dtype as DType
from ..dispatch.schema.errors import DeviceError, DtypeError
from ..dispatch.contract.host import c_contiguous
from .containers import check_plain
from .errors import CheckpointError, UnpicklingError
from .safe_globals import BUILTIN_SAFE, allowed, pickle_globals, refusal, unpickle
from ..tensor import Size
from .tensors import DTYPES, NUMPY, DeviceMap, addressable, checked_shape, make_tensor

LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001
LEGACY_MAGIC_BYTES = LEGACY_MAGIC_NUMBER.to_bytes(10, "little")


class TorchDtype:
    """A ``torch.<dtype>`` global: its torch name, and the Ember dtype it maps to (None: unsupported)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ember = DTYPES.get(name)
        self.itemsize = self.ember.itemsize if self.ember else _OTHER_ITEMSIZES.get(name, 1)

    def require(self) -> DType:
        if self.ember is None:
            raise DtypeError(f"ember.load: the checkpoint holds a tensor of dtype torch.{self.name}, which Ember does "
                             f"not support (supported: {', '.join(DTYPES)})")
        return self.ember


class StorageType(TorchDtype):
    """A storage class global (``torch.FloatStorage``, ``torch.UntypedStorage``): the dtype of its elements."""

    def __init__(self, class_name: str, dtype_name: str) -> None:
        super().__init__(dtype_name)
        self.class_name = class_name


_OTHER_ITEMSIZES = {"complex64": 8, "complex128": 16, "complex32": 4, "uint16": 2, "uint32": 4, "uint64": 8,
                    "qint32": 4}
_STORAGE_CLASSES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
                    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
                    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
                    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
                    "QUInt8Storage": "quint8", "QInt8Storage": "qint8", "QInt32Storage": "qint32",
                    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_DTYPE_NAMES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "complex32", "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn",
                "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "quint8", "qint8", "qint32"]


class Storage:
    """One storage record: its bytes as a writable uint8 buffer, the element dtype and the saved device."""

    def __init__(self, buffer: np.ndarray, dtype: TorchDtype, location: str) -> None:
        self.buffer = buffer
        self.dtype = dtype
        self.location = location
        self._bool_checked = False

    def elements(self, dt: DType) -> np.ndarray:
        """The buffer as ``dt`` elements; bool bytes other than 0/1 are made 1 (in place, once), so that
        no strange bool escapes."""
        if dt.name == "bool" and not self._bool_checked:
            np.minimum(self.buffer, 1, out=self.buffer)
            self._bool_checked = True
        usable = self.buffer.nbytes - self.buffer.nbytes % dt.itemsize
        return self.buffer[:usable].view(NUMPY[dt])


class _Rebuilder:
    """The Ember functions a torch pickle gets under torch's names; they build tensors from storages."""

    def __init__(self, devices: DeviceMap) -> None:
        self.devices = devices

    def tensor_v2(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
        if not isinstance(storage, Storage):
            raise CheckpointError(f"ember.load: _rebuild_tensor_v2 got {type(storage).__name__} as its storage")
        return self._tensor(storage, storage.dtype.require(), storage_offset, size, stride, requires_grad, metadata)

    def tensor_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
        if not isinstance(storage, Storage) or not isinstance(dtype, TorchDtype):
            raise CheckpointError("ember.load: _rebuild_tensor_v3 got a storage or dtype of the wrong kind")
        return self._tensor(storage, dtype.require(), storage_offset, size, stride, requires_grad, metadata)

    def parameter(self, data, requires_grad, backward_hooks, state=None):
        from ..nn.parameter import Parameter
        if state:
            raise CheckpointError(f"ember.load: a Parameter in this checkpoint carries Python attributes "
                                  f"{sorted(state) if isinstance(state, dict) else state!r}, which Ember's "
                                  f"Parameter cannot hold")
        if type(requires_grad) is not bool:
            raise CheckpointError("ember.load: _rebuild_parameter got a non-boolean requires_grad")
        return Parameter(data, requires_grad=requires_grad)

    def _tensor(self, storage: Storage, dt: DType, offset, size, stride, requires_grad, metadata):
        size = checked_shape(_int_tuple(size, "size"), dt.itemsize, "a tensor of this checkpoint")
        stride = _int_tuple(stride, "stride")
        elements = storage.elements(dt)
        if len(size) != len(stride) or type(offset) is not int or not 0 <= offset <= elements.size \
                or not all(addressable(s, dt.itemsize) for s in stride):
            raise CheckpointError(f"ember.load: a tensor of this checkpoint has an invalid layout: offset "
                                  f"{offset!r}, size {list(size)}, stride {list(stride)} over a storage of "
                                  f"{elements.size} {dt.name} elements")
        lazy = _lazy_bits(metadata)
        if type(requires_grad) is not bool or (requires_grad and not dt.is_inexact):
            raise CheckpointError(f"ember.load: a {dt.name} tensor of this checkpoint has requires_grad "
                                  f"{requires_grad!r}")
        if math.prod(size) == 0:
            host = np.empty(size, NUMPY[dt])
        else:
            end = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
            if end > elements.size:
                raise CheckpointError(f"ember.load: a tensor of this checkpoint (offset {offset}, size {list(size)}, "
                                      f"stride {list(stride)}) reaches element {end} of a storage of "
                                      f"{elements.size} {dt.name} elements: the file is damaged")
            itemsize = elements.itemsize
            host = np.ndarray(size, elements.dtype, elements, offset * itemsize, [s * itemsize for s in stride])
        if lazy:  # Ember keeps no conjugate or negative bit: the values are what the bits make of the storage
            host = _resolved(host, lazy)
        target = self.devices(storage.location, f"a tensor saved on {storage.location}")
        if target.type != "cpu":
            host = c_contiguous(host)  # views share memory on the CPU only
        try:
            return make_tensor(host, dt, target, requires_grad)
        except DtypeError as exc:
            raise DtypeError(f"ember.load: {exc}; pick another device with map_location") from None


def _lazy_bits(metadata) -> frozenset:
    """The bits PyTorch saves for a lazily conjugated or negated view (``{'conj': True}``, ``{'neg': True}``)."""
    if not metadata:
        return frozenset()
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"} \
            or not all(type(v) is bool for v in metadata.values()):
        raise CheckpointError(f"ember.load: a tensor of this checkpoint carries metadata {metadata!r}; Ember reads "
                              f"only the conjugate and negative bits")
    return frozenset(name for name, on in metadata.items() if on)


def _resolved(host: np.ndarray, bits: frozenset) -> np.ndarray:
    """A copy of the saved view with its conjugation and negation applied, as PyTorch's resolve_conj/_neg do."""
    if "conj" in bits:
        host = np.conj(host)
    return np.negative(host) if "neg" in bits else host


def _int_tuple(value, what: str) -> tuple:
    if not isinstance(value, (tuple, list)) or not all(type(v) is int for v in value):
        raise CheckpointError(f"ember.load: a tensor of this checkpoint has a non-integer {what} {value!r}")
    return tuple(value)


def _torch_device(*args):
    return Device(*args)


def _layout(name):
    """``torch.serialization._get_layout("torch.sparse_coo")``: the layout's name, checked."""
    if name not in ("torch.sparse_coo", "torch.sparse_csr", "torch.strided"):
        raise CheckpointError(f"ember.load: the checkpoint holds a tensor of layout {name!r}; Ember reads strided, "
                              f"sparse_coo and sparse_csr tensors")
    return name.split(".", 1)[1]


def _sparse_tensor(layout, data):
    """``torch._utils._rebuild_sparse_tensor``: a COO or CSR tensor from its components (checked)."""
    from ..sparse.serialization import from_torch
    if not isinstance(layout, str) or not isinstance(data, tuple):
        raise CheckpointError("ember.load: _rebuild_sparse_tensor got a layout or data of the wrong kind")
    try:
        return from_torch(layout, data)
    except (ValueError, RuntimeError, TypeError) as exc:
        raise CheckpointError(f"ember.load: a sparse tensor of this checkpoint is invalid: {exc}") from None


def _torch_globals(rebuild: _Rebuilder) -> dict[str, Any]:
    """Every ``torch.*`` name a weights-only PyTorch checkpoint uses, as Ember objects."""
    table: dict[str, Any] = {
        "torch._utils._rebuild_tensor_v2": rebuild.tensor_v2,
        "torch._utils._rebuild_tensor_v3": rebuild.tensor_v3,
        "torch._utils._rebuild_parameter": rebuild.parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild.parameter,
        "torch.device": _torch_device,
        "torch._utils._rebuild_sparse_tensor": _sparse_tensor,
        "torch.serialization._get_layout": _layout,
        "torch.Size": Size,
        "torch.storage.UntypedStorage": StorageType("UntypedStorage", "uint8"),
        "torch.UntypedStorage": StorageType("UntypedStorage", "uint8"),
    }
    for class_name, dtype_name in _STORAGE_CLASSES.items():
        table[f"torch.{class_name}"] = StorageType(class_name, dtype_name)
    for name in _DTYPE_NAMES:
        table[f"torch.{name}"] = TorchDtype(name)
    return table


_KNOWN_TORCH_GLOBALS = frozenset(_torch_globals(_Rebuilder(DeviceMap(None))))


def _finder(table: dict[str, Any], weights_only: bool):
    def find(module: str, name: str, import_it):
        full = f"{module}.{name}"
        found = table.get(full)
        if found is None:
            found = allowed(full, BUILTIN_SAFE)
        if found is not None:
            return found
        if module == "torch" or module.startswith("torch."):
            raise UnpicklingError(
                f"ember.load: this PyTorch checkpoint pickles {full}, a PyTorch object that Ember does not rebuild "
                f"(it loads tensors, containers and plain data from PyTorch files, and never imports torch). "
                f"Save model.state_dict() instead of the module, or allow a stand-in with "
                f"ember.serialization.add_safe_globals([(obj, {full!r})])")
        if weights_only:
            raise refusal(full)
        return import_it(module, name)
    return find


def _is_module_source(pid) -> bool:
    """Legacy files follow a pickled class by ('module', class, source file, source); the class itself was
    already looked up (and, unless allowed, refused) by find_class."""
    return isinstance(pid, tuple) and len(pid) == 4 and _ascii(pid[0]) == "module"


def _storage_id(pid, legacy: bool) -> tuple[StorageType, str, str, int, Any]:
    """(storage type, key, location, numel, legacy view metadata) of a persistent id, validated."""
    size = 6 if legacy else 5
    if not (isinstance(pid, tuple) and len(pid) == size and _ascii(pid[0]) == "storage"):
        raise CheckpointError(f"ember.load: unexpected persistent id {pid!r} in this torch checkpoint")
    kind, key, location, numel = pid[1], _ascii(pid[2]), _ascii(pid[3]), pid[4]
    if not isinstance(kind, StorageType) or not isinstance(key, str) or not _is_device(location) \
            or type(numel) is not int or not addressable(numel, kind.itemsize):
        raise CheckpointError(f"ember.load: malformed storage reference {pid!r} in this torch checkpoint")
    return kind, key, location, numel, pid[5] if legacy else None


def _is_device(location) -> bool:
    """Whether a storage's location is a device string at all (whether that device is here is asked later)."""
    try:
        Device(location)
    except (DeviceError, TypeError, ValueError):
        return False
    return isinstance(location, str)


def _ascii(value):
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


# -- the zip format ---------------------------------------------------------------------------------------

_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, zlib.error, KeyError,
               NotImplementedError, struct.error)


def _open_zip(stream) -> tuple[zipfile.ZipFile, str]:
    try:
        archive = zipfile.ZipFile(stream)
        names = archive.namelist()
    except _ZIP_ERRORS as exc:
        raise CheckpointError(f"ember.load: this zip archive (a torch.save file?) is truncated or damaged: "
                              f"{exc}") from None
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        hint = " It looks like TorchScript (torch.jit.save), which Ember cannot load." \
            if any(n.endswith("/constants.pkl") for n in names) else ""
        raise CheckpointError(f"ember.load: this zip archive is not a torch.save checkpoint: it has no single "
                              f"<name>/data.pkl record.{hint}")
    return archive, pickles[0][:-len("data.pkl")]


class _Budget:
    """What reading an archive's records may allocate in all: the archive's own size. torch.save stores
    records uncompressed and apart, so a real checkpoint always fits; records that overlap (one member's
    bytes inside another's) or that inflate from a few compressed bytes do not."""

    def __init__(self, stream) -> None:
        self.left = stream.seek(0, 2)
        stream.seek(0)

    def charge(self, nbytes: int, name: str) -> None:
        if nbytes > self.left:
            raise CheckpointError(f"ember.load: record {name} of this torch.save archive holds {nbytes} bytes, "
                                  f"more than the archive has left to give ({self.left}): its records overlap or "
                                  f"inflate beyond the file's size (a zip bomb?)")
        self.left -= nbytes


_CHUNK = 2 ** 20


def _read_member(archive: zipfile.ZipFile, name: str, budget: _Budget) -> np.ndarray:
    """A record's bytes, CRC-checked, read in chunks into one writable buffer of its declared size."""
    try:
        info = archive.getinfo(name)
        budget.charge(info.file_size, name)
        buffer = np.empty(info.file_size, np.uint8)
        view, filled = memoryview(buffer), 0
        with archive.open(info) as member:  # reading its last byte checks its CRC-32
            while filled < info.file_size and (chunk := member.read(min(_CHUNK, info.file_size - filled))):
                view[filled:filled + len(chunk)] = chunk
                filled += len(chunk)
        if filled != info.file_size:
            raise zipfile.BadZipFile(f"the record ends after {filled} of {info.file_size} bytes")
    except _ZIP_ERRORS as exc:
        raise CheckpointError(f"ember.load: cannot read {name} from this torch.save archive (truncated or "
                              f"damaged): {exc}") from None
    return buffer


def _byteorder(archive: zipfile.ZipFile, prefix: str, budget: _Budget) -> str:
    if prefix + "byteorder" not in archive.namelist():
        return "little"  # files from before PyTorch recorded it were written on little-endian machines
    order = _read_member(archive, prefix + "byteorder", budget).tobytes().decode("ascii", "replace")
    if order not in ("little", "big"):
        raise CheckpointError(f"ember.load: this torch.save archive records byte order {order!r}")
    return order


def _native(buffer: np.ndarray, itemsize: int, order: str) -> np.ndarray:
    if itemsize > 1 and order != ("little" if np.little_endian else "big"):
        buffer.view(f"u{itemsize}").byteswap(inplace=True)
    return buffer


def load_zip(stream, devices: DeviceMap, weights_only: bool):
    budget = _Budget(stream)
    archive, prefix = _open_zip(stream)
    order = _byteorder(archive, prefix, budget)
    storages: dict[str, Storage] = {}

    def persistent_load(pid):
        kind, key, location, numel, _ = _storage_id(pid, legacy=False)
        storage = storages.get(key)
        if storage is None:
            buffer = _read_member(archive, f"{prefix}data/{key}", budget)
            if buffer.nbytes < numel * kind.itemsize:
                raise CheckpointError(f"ember.load: storage {key} holds {buffer.nbytes} bytes, but the pickle "
                                      f"expects {numel} elements of {kind.name}: the file is damaged")
            storage = storages[key] = Storage(_native(buffer, kind.itemsize, order), kind, location)
        return storage

    find = _finder(_torch_globals(_Rebuilder(devices)), weights_only)
    data = _read_member(archive, prefix + "data.pkl", budget).tobytes()
    return _plain(unpickle(data, find, persistent_load, "the pickle (data.pkl) of this torch.save file"),
                  weights_only)


def _plain(result, weights_only: bool):
    if weights_only:
        check_plain(result, "in this torch.save file")
    return result


def zip_globals(stream) -> list[str]:
    budget = _Budget(stream)
    archive, prefix = _open_zip(stream)
    return pickle_globals(_read_member(archive, prefix + "data.pkl", budget).tobytes(),
                          "data.pkl of this torch.save file")


# -- the legacy format: magic number, protocol, system info, the pickle, storage keys, raw storages ----------

class _Placeholder:
    """What a dry run hands the pickle for every global: it accepts any call and builds nothing real."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass

    def __setitem__(self, key, value) -> None:
        pass

    def append(self, value) -> None:
        pass

    def extend(self, values) -> None:
        pass


def _header_value(stream, what: str):
    return unpickle(stream, _no_globals, _no_persistent_ids, f"the {what} of this legacy torch.save file")


def _no_globals(module, name, import_it):
    raise UnpicklingError(f"ember.load: the header of this legacy torch.save file names {module}.{name}")


def _no_persistent_ids(pid):
    raise UnpicklingError("ember.load: unexpected persistent id in the header of this legacy torch.save file")


def _legacy_preamble(stream) -> None:
    if _header_value(stream, "magic number") != LEGACY_MAGIC_NUMBER:
        raise CheckpointError("ember.load: not a torch.save file (wrong magic number)")
    protocol = _header_value(stream, "protocol version")
    if protocol != LEGACY_PROTOCOL_VERSION:
        raise CheckpointError(f"ember.load: legacy torch.save protocol {protocol!r}; Ember reads "
                              f"{LEGACY_PROTOCOL_VERSION}")
    info = _header_value(stream, "system information")
    if not isinstance(info, dict) or info.get("little_endian") is not True:
        raise CheckpointError("ember.load: this legacy torch.save file was written on a big-endian machine "
                              "(or lacks its system information); Ember reads little-endian ones")


def _storage_sizes(stream) -> dict[str, StorageType]:
    """Dry run of the main pickle: the element type of each storage key, with nothing imported or called,
    because the raw storages follow the pickle and their sizes depend on it."""
    types: dict[str, StorageType] = {}
    table = _torch_globals(_Rebuilder(DeviceMap(None)))

    def find(module, name, import_it):
        found = table.get(f"{module}.{name}")
        return found if isinstance(found, TorchDtype) else type(name, (_Placeholder,), {})

    def persistent_load(pid):
        if _is_module_source(pid):
            return pid[1]
        kind, key, _, _, _ = _storage_id(pid, legacy=True)
        types.setdefault(key, kind)
        return _Placeholder()

    unpickle(stream, find, persistent_load, "the pickle of this legacy torch.save file")
    return types


def _read_exact(stream, nbytes: int, what: str) -> np.ndarray:
    buffer = np.empty(nbytes, np.uint8)
    if stream.readinto(memoryview(buffer)) != nbytes:
        raise CheckpointError(f"ember.load: this legacy torch.save file ends inside {what}: it is truncated")
    return buffer


def load_legacy(stream, devices: DeviceMap, weights_only: bool):
    size = stream.seek(0, 2)
    stream.seek(0)
    _legacy_preamble(stream)
    start = stream.tell()
    types = _storage_sizes(stream)
    keys = _header_value(stream, "storage key list")
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)) or set(keys) != set(types):
        raise CheckpointError("ember.load: the storage key list of this legacy torch.save file does not match "
                              "its pickle")
    raw: dict[str, np.ndarray] = {}
    for key in keys:
        (count,) = struct.unpack("<q", _read_exact(stream, 8, f"the size of storage {key}").tobytes())
        itemsize = types[key].itemsize
        if count < 0 or count * itemsize > size - stream.tell():
            raise CheckpointError(f"ember.load: storage {key} claims {count} elements, more than the rest of the "
                                  f"file holds: it is truncated or damaged")
        raw[key] = _native(_read_exact(stream, count * itemsize, f"storage {key}"), itemsize, "little")
    end = stream.tell()
    stream.seek(start)
    storages: dict[str, Storage] = {}

    def persistent_load(pid):
        if _is_module_source(pid):
            return pid[1]
        kind, key, location, numel, view = _storage_id(pid, legacy=True)
        root = storages.get(key)
        if root is None:
            root = storages[key] = Storage(raw[key], kind, location)
        if view is None:
            return root
        if not (isinstance(view, tuple) and len(view) == 3 and all(type(v) is int for v in view[1:])):
            raise CheckpointError(f"ember.load: malformed storage view {view!r} in this legacy torch.save file")
        view_key, offset, size = _ascii(view[0]), view[1] * kind.itemsize, view[2] * kind.itemsize
        if not (isinstance(view_key, str) and 0 <= offset and 0 <= size and offset + size <= root.buffer.nbytes):
            raise CheckpointError(f"ember.load: storage view {view!r} does not lie inside storage {key} "
                                  f"({root.buffer.nbytes // kind.itemsize} elements) in this legacy torch.save file")
        if view_key not in storages:
            storages[view_key] = Storage(root.buffer[offset:offset + size], kind, location)
        return storages[view_key]

    find = _finder(_torch_globals(_Rebuilder(devices)), weights_only)
    result = unpickle(stream, find, persistent_load, "the pickle of this legacy torch.save file")
    stream.seek(end)
    return _plain(result, weights_only)


def legacy_globals(stream) -> list[str]:
    _legacy_preamble(stream)
    return pickle_globals(_pickle_bytes(stream), "the pickle of this legacy torch.save file")


def _pickle_bytes(stream) -> bytes:
    """The bytes of the pickle at the stream's position, found by walking its opcodes."""
    start = stream.tell()
    try:
        for op, _, _ in pickletools.genops(stream):
            if op.name == "STOP":
                break
    except ValueError as exc:
        raise UnpicklingError(f"ember.load: the pickle of this legacy torch.save file is damaged: {exc}") from None
    end = stream.tell()
    stream.seek(start)
    return stream.read(end - start)


def looks_like_legacy(head: bytes) -> bool:
    return head[:1] == b"\x80" and LEGACY_MAGIC_BYTES in head[:32]


def is_known_torch_global(name: str) -> bool:
    return name in _KNOWN_TORCH_GLOBALS
