"""An attack run on ``ember.load``: about two hundred crafted checkpoint files, and what loading each one did.

Every file is malformed or hostile in one way, in one of the formats ``ember.load`` and ``load_safetensors``
read (Ember's own, PyTorch's zip and legacy formats, safetensors) or as an endless stream. Each is built from
a valid file of its format (checked to load) with one thing changed, so that a failure points at one flaw.
The files are written by hand, so none of this needs torch.

    python tests/hostile_checkpoints.py      # prints the outcome counts per category

An outcome is clean when loading raises ``CheckpointError`` or, for alias bombs (well-formed files whose
records share one blob), loads; in both cases NumPy and Python may allocate at most the file's size plus
``SLACK`` bytes while loading (measured with ``tracemalloc``, which sees NumPy's buffers).
"""
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import signal
import struct
import sys
import tempfile
import tracemalloc
import zipfile
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

import ember
from ember.serialization import CheckpointError, load_safetensors

SLACK = 4 * 2 ** 20  # what loading may allocate beyond the file's size: parsing, small objects, one read chunk
BLOB = 8 * 2 ** 20  # the blob that alias bombs point 96 records at
STREAM_LIMIT = 64 * 2 ** 20  # MAX_STREAM_BYTES during the endless-stream cases: far more than they may hold in memory
RUNAWAY = 256 * 2 ** 20  # an endless stream stops the run by itself after this much, if the reader does not
DEADLINE_S = 60  # a load still running after this long counts as a hang
CANARY = os.path.join(tempfile.gettempdir(), f"ember-hostile-canary-{os.getpid()}")
#: ``os.system('touch "$EMBER_HOSTILE_CANARY"')`` as a protocol-0 pickle: if any loader ever runs it, the canary
#: file shows it (the run sets the variable to ``CANARY``).
RUN_CODE = b"cos\nsystem\n(S'touch \"$EMBER_HOSTILE_CANARY\"'\ntR."


@dataclass
class Case:
    category: str
    name: str
    make: Callable[[], object]  # bytes of a file, or a stream to load from
    may_load: bool = False  # an alias bomb: loading it (within the memory bound) is as good as refusing it
    safetensors: bool = False


class RunawayRead(Exception):
    """The reader went on reading an endless stream far beyond any sensible bound."""


_ZEROS = memoryview(bytes(2 ** 20))  # made before any measurement, so that the stream itself allocates nothing


EMBER_MAGIC_ONLY = b"\x89EMBER\r\n"  # Ember's magic number, then zeros: format version 0
EMBER_HEAD = struct.pack("<8sII", EMBER_MAGIC_ONLY, 2, 0)  # a head this Ember reads, then zeros without end
ZIP_HEAD = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 16, 0) + b"archive/data.pkl"


class EndlessStream(io.RawIOBase):
    """A pipe that never ends: zeros after ``head`` (Ember's magic number by default)."""

    def __init__(self, head: bytes = EMBER_MAGIC_ONLY) -> None:
        self.sent = 0
        self.head = head

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.sent > RUNAWAY:
            raise RunawayRead(f"read {self.sent} bytes of an endless stream")
        view = memoryview(buffer).cast("B")
        count = min(len(view), len(_ZEROS))
        view[:count] = _ZEROS[:count]
        if self.sent == 0:
            view[:len(self.head)] = self.head
        self.sent += count
        return count


# -- Ember format --------------------------------------------------------------------------------------------

_FOOTER = struct.Struct("<QQI8s")


def _ember_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    return buffer.getvalue()


def split_checkpoint(raw: bytes):
    """(data part, header dict) of an Ember checkpoint, for crafting modified files."""
    offset, length, _, _ = _FOOTER.unpack(raw[-_FOOTER.size:])
    return raw[:offset], json.loads(raw[offset:offset + length])


def join_checkpoint(data: bytes, header: dict) -> bytes:
    """A checkpoint with ``header`` and a correct footer, so only the header's content is wrong."""
    text = json.dumps(header).encode()
    return data + text + _FOOTER.pack(len(data), len(text), zlib.crc32(text), b"EMBEREND")


def _ember_edit(edit, fix_crc: bool = False) -> Callable[[], bytes]:
    """A valid Ember file whose header one edit changed; ``fix_crc`` makes the records' CRC-32s match again,
    so that only the edit is wrong."""
    def make():
        data, header = split_checkpoint(_ember_bytes({"w": ember.ones(4, 4), "b": b"abc", "a": np.arange(3)}))
        edit(header)
        for record in header["tensors"] + header["arrays"] if fix_crc else []:
            record["crc32"] = zlib.crc32(data[record["offset"]:record["offset"] + record["nbytes"]])
        return join_checkpoint(data, header)
    return make


def _record(field, value, table="tensors"):
    return lambda h: h[table][0].__setitem__(field, value)


def _shape(shape, nbytes, table="tensors"):
    def edit(h):
        h[table][0]["shape"] = shape
        h[table][0]["nbytes"] = nbytes
    return edit


_BAD_SHAPES = [([0, 2 ** 62], 0), ([0, 10 ** 30], 0), ([2 ** 62, 0], 0), ([0, 2 ** 63], 0), ([0, 2 ** 64], 0),
               ([1] * 65, 4), ([1] * 5000, 4), ([0] * 65, 0), ([0] * 5000, 0), ([2 ** 31, 2 ** 31, 0, 4], 0),
               ([0, -1], 0), ([-4], 0), ([1.5], 0), ([True], 0), (["4"], 0), ("4", 0), (None, 0), ({}, 0)]


def _ember_cases() -> list[Case]:
    cases = []
    for i, (shape, nbytes) in enumerate(_BAD_SHAPES):
        cases.append(Case("ember: shapes", f"tensor shape {str(shape)[:40]}",
                          _ember_edit(_shape(shape, nbytes), fix_crc=True)))
        cases.append(Case("ember: shapes", f"array shape {str(shape)[:40]}",
                          _ember_edit(_shape(shape, nbytes, "arrays"), fix_crc=True)))
    for field, value in [("offset", -64), ("offset", 2 ** 64), ("offset", 10 ** 30), ("offset", 3), ("offset", 1.0),
                         ("nbytes", -1), ("nbytes", 2 ** 63), ("nbytes", 63), ("nbytes", 65), ("nbytes", None),
                         ("crc32", 0), ("crc32", -1), ("crc32", "x")]:
        cases.append(Case("ember: extents", f"tensor {field}={value}", _ember_edit(_record(field, value))))
        cases.append(Case("ember: extents", f"array {field}={value}", _ember_edit(_record(field, value, "arrays"))))
    for value in ["complex64", "float128", "float8_e4m3fn", "<f4", "", 5, None, ["float32"], "bool "]:
        cases.append(Case("ember: dtypes", f"tensor dtype {value!r}", _ember_edit(_record("dtype", value))))
    for value in ["O", "|V8", "<U0", "object", "<f16", 7, "float", "<f4 "]:
        cases.append(Case("ember: dtypes", f"array dtype {value!r}", _ember_edit(_record("dtype", value, "arrays"))))
    cases += [
        Case("ember: dtypes", "bool tensor holding byte 7", _bool_byte(7)),
        Case("ember: dtypes", "bool tensor holding byte 255", _bool_byte(255)),
        Case("ember: records", "device 'nowhere:0'", _ember_edit(_record("device", "nowhere:0"))),
        Case("ember: records", "device 5", _ember_edit(_record("device", 5))),
        Case("ember: records", "requires_grad 'yes'", _ember_edit(_record("requires_grad", "yes"))),
        Case("ember: records", "tensor record a list", _ember_edit(lambda h: h["tensors"].__setitem__(0, []))),
        Case("ember: records", "tensor index 7", _ember_edit(lambda h: h["root"]["items"][0][1].update(index=7))),
        Case("ember: records", "tensor index -1", _ember_edit(lambda h: h["root"]["items"][0][1].update(index=-1))),
        Case("ember: records", "node type 'eval'", _ember_edit(lambda h: h["root"].update({"$": "eval"}))),
        Case("ember: records", "tensors not a list", _ember_edit(lambda h: h.update(tensors={}))),
        Case("ember: records", "header a list", _ember_edit(lambda h: h.clear() or h.update(root=[], tensors=7))),
        Case("ember: records", "special float 1e999", _ember_edit(lambda h: h.update(root={"$": "float",
                                                                                            "value": "1e999"}))),
        Case("ember: records", "bytes out of range", _ember_edit(lambda h: h["root"]["items"][1][1].update(
            nbytes=10 ** 12))),
        Case("ember: records", "unhashable key", _ember_edit(lambda h: h["root"].update(items=[[[1], 2]]))),
        Case("ember: records", "object index without objects",
             _ember_edit(lambda h: h.update(root={"$": "object", "index": 0}))),
    ]
    for name in ["items", "keys", "get", "values", "update", "pop", "copy", "move_to_end", "__class__"]:
        cases.append(Case("ember: containers", f"odict attribute {name!r}", _ember_edit(
            lambda h, name=name: h.update(root={"$": "odict", "items": [], "attrs": {name: 1}}))))
    raw = _ember_bytes({"w": ember.randn(100), "b": b"x" * 300, "n": [1, 2, 3]})
    for cut in [0, 5, 15, 16, 63, 64, 200, len(raw) // 2, len(raw) - 29, len(raw) - 28, len(raw) - 1]:
        cases.append(Case("ember: truncated", f"cut at {cut}", lambda cut=cut: raw[:cut]))
    cases += [Case("ember: truncated", "version 99", lambda: raw[:8] + struct.pack("<I", 99) + raw[12:]),
              Case("ember: truncated", "footer past the end",
                   lambda: raw[:-28] + _FOOTER.pack(2 ** 63, 10, 0, b"EMBEREND")),
              Case("ember: truncated", "header of 2**40 bytes",
                   lambda: raw[:-28] + _FOOTER.pack(64, 2 ** 40, 0, b"EMBEREND"))]
    return cases + _ember_pickle_cases() + _ember_alias_cases()


def _bool_byte(value: int) -> Callable[[], bytes]:
    def make():
        data, header = split_checkpoint(_ember_bytes({"m": ember.ones(8, dtype=ember.bool)}))
        record = header["tensors"][0]
        data = bytearray(data)
        data[record["offset"]] = value
        record["crc32"] = zlib.crc32(bytes(data[record["offset"]:record["offset"] + record["nbytes"]]))
        return join_checkpoint(bytes(data), header)
    return make


def _with_objects_pickle(payload: bytes) -> Callable[[], bytes]:
    """An Ember file whose pickle of objects is ``payload``."""
    def make():
        data, header = split_checkpoint(_ember_bytes({"o": collections.Counter(a=1)}))
        offset = len(data) + (-len(data) % 64)
        data = data + bytes(offset - len(data)) + payload
        header["objects"].update(offset=offset, nbytes=len(payload), crc32=zlib.crc32(payload))
        return join_checkpoint(data, header)
    return make


def _memo_bomb(index: int) -> bytes:
    """13 bytes that make CPython's C unpickler allocate a memo table of ``2 * index`` pointers."""
    return b"\x80\x02]r" + struct.pack("<I", index) + b"."


def _bytearray_bomb(size: int) -> bytes:
    """``[bytearray(size)]``: a few bytes that ask an allowed global for ``size`` bytes."""
    return b"\x80\x02c__builtin__\nbytearray\nJ" + struct.pack("<i", size) + b"\x85R\x85."


def _ember_pickle_cases() -> list[Case]:
    payloads = {
        "garbage": b"\x00\x01\x02garbage",
        "truncated": pickle.dumps([1, 2, 3], protocol=4)[:-4],
        "empty": b"",
        "not a list": pickle.dumps({"a": 1}, protocol=4),
        "memo bomb": _memo_bomb(2 ** 24),
        "bytearray bomb": _bytearray_bomb(2 ** 28),
        "os.system": RUN_CODE,
        "unknown persistent id": b"\x80\x04(X\x03\x00\x00\x00evilK\x00tQ\x85.",
        "huge BINBYTES8": b"\x80\x04\x8e" + struct.pack("<Q", 2 ** 62) + b"x.",
        "huge frame": b"\x80\x04\x95" + struct.pack("<Q", 2 ** 40) + b"].",
        "deep nesting": b"\x80\x04" + b"]" * 30000 + b"a" * 29999 + b"\x85.",
    }
    return [Case("ember: pickles", name, _with_objects_pickle(payload)) for name, payload in payloads.items()]


def _ember_alias_cases() -> list[Case]:
    def aliases(count: int, shift: int, dtype: str = "float32") -> Callable[[], bytes]:
        def make():
            data, header = split_checkpoint(_ember_bytes({"w": ember.ones(BLOB // 4)}))
            base = dict(header["tensors"][0])
            records = []
            for i in range(count):
                record = dict(base, offset=base["offset"] + i * shift, nbytes=base["nbytes"] - i * shift,
                              shape=[(base["nbytes"] - i * shift) // np.dtype(dtype).itemsize], dtype=dtype)
                record["crc32"] = zlib.crc32(data[record["offset"]:record["offset"] + record["nbytes"]])
                records.append(record)
            header["tensors"] = records
            header["root"] = [{"$": "tensor", "index": i} for i in range(count)]
            return join_checkpoint(data, header)
        return make

    def bytes_aliases(count: int, shift: int) -> Callable[[], bytes]:
        def make():
            data, header = split_checkpoint(_ember_bytes({"b": bytes(BLOB)}))
            node = header["root"]["items"][0][1]
            header["root"] = [dict(node, offset=node["offset"] + i * shift, nbytes=node["nbytes"] - i * shift,
                                   crc32=zlib.crc32(bytes(node["nbytes"] - i * shift))) for i in range(count)]
            return join_checkpoint(data, header)
        return make

    return [Case("ember: alias bombs", "96 tensors over one 8 MB blob", aliases(96, 0), may_load=True),
            Case("ember: alias bombs", "96 int32 tensors over one blob", aliases(96, 0, "int32"), may_load=True),
            Case("ember: alias bombs", "96 tensors, each 64 bytes on", aliases(96, 64), may_load=True),
            Case("ember: alias bombs", "96 bytes objects over one blob", bytes_aliases(96, 0), may_load=True),
            Case("ember: alias bombs", "96 bytes objects, each 64 bytes on", bytes_aliases(96, 64),
                 may_load=True)]


# -- PyTorch's zip and legacy formats, written without torch ---------------------------------------------------

class Global:
    """A global a torch pickle names, e.g. ``Global("torch._utils", "_rebuild_tensor_v2")``."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name, self.__name__ = module, name, name

    def __call__(self, *args):  # pickle only reduces to callables
        raise AssertionError("never called")


class Call:
    """``func(*args)`` in a pickle; ``state`` is applied with BUILD."""

    def __init__(self, func: Global, *args, state=None) -> None:
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (self.func, self.args, self.state)


class StorageRef:
    """A persistent id: ``("storage", FloatStorage, key, location, numel[, view])``."""

    def __init__(self, *pid) -> None:
        self.pid = pid


class _TorchPickler(pickle._Pickler):  # the Python pickler lets ``save`` write a Global's opcode itself
    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, StorageRef) else None


def _torch_pickle(obj) -> bytes:
    buffer = io.BytesIO()
    _TorchPickler(buffer, protocol=2).dump(obj)
    return buffer.getvalue()


REBUILD = Global("torch._utils", "_rebuild_tensor_v2")
FLOAT = Global("torch", "FloatStorage")
ODICT = Global("collections", "OrderedDict")


def _tensor(storage: StorageRef, offset=0, size=(4,), stride=(1,)) -> Call:
    return Call(REBUILD, storage, offset, tuple(size), tuple(stride), False, Call(ODICT))


def _zip(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _torch_zip(obj, storages: dict[str, bytes] | None = None, **kwargs) -> bytes:
    storages = {"0": np.arange(4, dtype=np.float32).tobytes()} if storages is None else storages
    members = {"archive/data.pkl": _torch_pickle(obj), "archive/byteorder": b"little"}
    members.update({f"archive/data/{key}": data for key, data in storages.items()})
    return _zip(members, **kwargs)


def _float_storage(numel=4, key="0") -> StorageRef:
    return StorageRef("storage", FLOAT, key, "cpu", numel)


_BAD_LAYOUTS = [
    (0, (0, 2 ** 62), (1, 1)), (0, (0, 10 ** 30), (1, 1)), (0, (1,) * 65, (1,) * 65), (0, (1,) * 5000, (1,) * 5000),
    (0, (0,) * 65, (0,) * 65), (0, (4,), (-1,)), (0, (4,), (2 ** 62,)), (0, (2,), (2 ** 62,)), (0, (1,), (2 ** 63,)),
    (0, (2,), (10 ** 30,)), (-1, (4,), (1,)), (2 ** 62, (1,), (1,)), (2 ** 62, (0,), (1,)), (10 ** 30, (1,), (1,)),
    (0, (5,), (1,)), (0, (4,), (1, 1)), (0, (4.0,), (1,)), (0, "4", (1,)), ("0", (4,), (1,)), (0, (-4,), (1,)),
]


def _torch_zip_cases() -> list[Case]:
    valid = lambda: _torch_zip({"w": _tensor(_float_storage())})  # noqa: E731
    cases = [Case("torch zip: layouts", f"offset {o} size {str(s)[:30]} stride {str(st)[:30]}",
                  lambda o=o, s=s, st=st: _torch_zip({"w": _tensor(_float_storage(), o, s, st)}))
             for o, s, st in _BAD_LAYOUTS]
    raw = valid()
    cases += [Case("torch zip: truncated", f"cut at {cut}", lambda cut=cut: raw[:cut])
              for cut in [4, 30, 60, 100, 200, len(raw) // 2, len(raw) - 30, len(raw) - 22, len(raw) - 1]]
    cases += [
        Case("torch zip: records", "storage shorter than numel",
             lambda: _torch_zip({"w": _tensor(_float_storage(1000))})),
        Case("torch zip: records", "numel -1", lambda: _torch_zip({"w": _tensor(_float_storage(-1))})),
        Case("torch zip: records", "numel 2**62", lambda: _torch_zip({"w": _tensor(_float_storage(2 ** 62))})),
        Case("torch zip: records", "missing storage",
             lambda: _torch_zip({"w": _tensor(_float_storage(key="9"))})),
        Case("torch zip: records", "unknown storage class", lambda: _torch_zip({"w": _tensor(StorageRef(
            "storage", Global("torch", "FunkyStorage"), "0", "cpu", 4))})),
        Case("torch zip: records", "storage type a string", lambda: _torch_zip({"w": _tensor(StorageRef(
            "storage", "FloatStorage", "0", "cpu", 4))})),
        Case("torch zip: records", "location 'nowhere'", lambda: _torch_zip({"w": _tensor(StorageRef(
            "storage", FLOAT, "0", "nowhere", 4))})),
        Case("torch zip: records", "persistent id of 3", lambda: _torch_zip({"w": _tensor(StorageRef(
            "storage", FLOAT, "0"))})),
        Case("torch zip: records", "v3 with dtype torch.quux", lambda: _torch_zip({"w": Call(
            Global("torch._utils", "_rebuild_tensor_v3"), _float_storage(), 0, (4,), (1,), False, Call(ODICT),
            Global("torch", "quux"))})),
        Case("torch zip: records", "rebuild with a string storage", lambda: _torch_zip({"w": Call(
            REBUILD, "storage", 0, (4,), (1,), False, Call(ODICT))})),
        Case("torch zip: records", "rebuild with 3 arguments", lambda: _torch_zip({"w": Call(
            REBUILD, _float_storage(), 0, (4,))})),
        Case("torch zip: records", "byteorder 'middle'", lambda: _zip({
            "archive/data.pkl": _torch_pickle({"w": _tensor(_float_storage())}), "archive/byteorder": b"middle",
            "archive/data/0": bytes(16)})),
        Case("torch zip: records", "no data.pkl", lambda: _zip({"archive/data/0": bytes(16)})),
        Case("torch zip: records", "two data.pkl", lambda: _zip({"a/data.pkl": _torch_pickle(1),
                                                                  "b/data.pkl": _torch_pickle(2)})),
        Case("torch zip: records", "corrupt storage CRC", lambda: _flip(raw, raw.index(np.float32(2).tobytes()))),
        Case("torch zip: records", "corrupt central directory", lambda: _flip(raw, raw.rindex(b"PK\x01\x02") + 10)),
        Case("torch zip: records", "dict subclass shadowing 'items'", lambda: _torch_zip(
            Call(ODICT, state={"items": 1, "keys": 2, "get": 3}))),
        Case("torch zip: records", "OrderedDict shadowing 'get'", lambda: _torch_zip(
            {"sd": Call(ODICT, state={"_metadata": {}, "get": "x"})})),
    ]
    for name, payload in [("garbage", b"\x80\x02garbage"), ("empty", b""), ("bytearray bomb", _bytearray_bomb(2 ** 28)),
                          ("os.system", RUN_CODE),
                          ("torch.nn.Linear", b"\x80\x02ctorch.nn\nLinear\n)R.")]:
        cases.append(Case("torch zip: pickles", name, lambda payload=payload: _zip({"archive/data.pkl": payload})))
    cases.append(Case("torch zip: pickles", "memo bomb (a valid pickle of [])",
                      lambda: _zip({"archive/data.pkl": _memo_bomb(2 ** 24)}), may_load=True))
    cases += [Case("torch zip: alias bombs", "96 overlapping 8 MB members", _zip_overlap_bomb, may_load=True),
              Case("torch zip: alias bombs", "deflated 256 MB of zeros", lambda: _torch_zip(
                  {"w": _tensor(_float_storage(2 ** 26), size=(2 ** 26,))}, {"0": bytes(2 ** 28)},
                  compression=zipfile.ZIP_DEFLATED), may_load=True)]
    return cases


def _flip(raw: bytes, at: int) -> bytes:
    damaged = bytearray(raw)
    damaged[at] ^= 0x40
    return bytes(damaged)


def _zip_overlap_bomb() -> bytes:
    """96 stored storages that overlap: each one's data is the next one's local header, its data and so on,
    down to one 8 MB run of zeros (a non-recursive zip bomb: the archive is 8 MB, its members 96 x 8 MB)."""
    count = 96
    pickle_only = _torch_zip({f"w{i}": _tensor(_float_storage(BLOB // 4, f"{i:02d}"), size=(BLOB // 4,))
                              for i in range(count)}, {})
    head = pickle_only[:pickle_only.index(b"PK\x01\x02")]  # the pickle and byteorder members
    entries = [_central_entry(info) for info in zipfile.ZipFile(io.BytesIO(pickle_only)).infolist()]
    data = bytes(BLOB)
    locals_ = []
    for i in reversed(range(count)):
        name = f"archive/data/{i:02d}".encode()
        crc = zlib.crc32(data)
        local = struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, crc, len(data), len(data), len(name),
                            0) + name
        locals_.append((name, crc, len(data)))
        data = local + data
    offset = len(head)
    for name, crc, size in reversed(locals_):
        info = zipfile.ZipInfo(name.decode())
        info.header_offset, info.CRC, info.compress_size, info.file_size = offset, crc, size, size
        entries.append(_central_entry(info))
        offset += 30 + len(name)
    central = b"".join(entries)
    body = head + data
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), len(body), 0)
    return body + central + end


def _central_entry(info: zipfile.ZipInfo) -> bytes:
    name = info.filename.encode()
    return struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0, info.CRC, info.compress_size,
                       info.file_size, len(name), 0, 0, 0, 0, 0, info.header_offset) + name


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _legacy(obj, storages: dict[str, tuple[int, bytes]], keys=None, magic=LEGACY_MAGIC, protocol=1001,
            little_endian=True) -> bytes:
    """A pre-1.6 torch.save file: magic, protocol, system info, the pickle, the key list, raw storages."""
    parts = [pickle.dumps(magic, protocol=2), pickle.dumps(protocol, protocol=2),
             pickle.dumps({"protocol_version": protocol, "little_endian": little_endian,
                           "type_sizes": {"short": 2, "int": 4, "long": 4}}, protocol=2),
             _torch_pickle(obj), pickle.dumps(list(storages) if keys is None else keys, protocol=2)]
    for count, data in storages.values():
        parts.append(struct.pack("<q", count) + data)
    return b"".join(parts)


def _legacy_storage(numel=4, key="0", view=None) -> StorageRef:
    return StorageRef("storage", FLOAT, key, "cpu", numel, view)


def _legacy_cases() -> list[Case]:
    data = np.arange(4, dtype=np.float32).tobytes()
    valid = lambda **kw: _legacy({"w": _tensor(_legacy_storage())}, {"0": (4, data)}, **kw)  # noqa: E731
    raw = valid()
    cases = [Case("torch legacy: truncated", f"cut at {cut}", lambda cut=cut: raw[:cut])
             for cut in [1, 11, 20, 40, 80, len(raw) // 2, len(raw) - 17, len(raw) - 8, len(raw) - 1]]
    cases += [
        Case("torch legacy: records", "wrong magic", lambda: valid(magic=12345)),
        Case("torch legacy: records", "protocol 7", lambda: valid(protocol=7)),
        Case("torch legacy: records", "big-endian", lambda: valid(little_endian=False)),
        Case("torch legacy: records", "storage count -1", lambda: _legacy(
            {"w": _tensor(_legacy_storage())}, {"0": (-1, data)})),
        Case("torch legacy: records", "storage count 2**62", lambda: _legacy(
            {"w": _tensor(_legacy_storage())}, {"0": (2 ** 62, data)})),
        Case("torch legacy: records", "keys do not match", lambda: _legacy(
            {"w": _tensor(_legacy_storage())}, {"0": (4, data)}, keys=["1"])),
        Case("torch legacy: records", "keys not a list", lambda: _legacy(
            {"w": _tensor(_legacy_storage())}, {"0": (4, data)}, keys="0")),
    ]
    for view in [("v", -1, 2), ("v", 0, 10 ** 6), ("v", 2 ** 62, 1), ("v", 3, -2), ("v", "0", 1), ("v", 0)]:
        cases.append(Case("torch legacy: records", f"view {view}", lambda view=view: _legacy(
            {"w": _tensor(_legacy_storage(view=view), size=(1,))}, {"0": (4, data)})))
    for o, s, st in _BAD_LAYOUTS[:12]:
        cases.append(Case("torch legacy: layouts", f"offset {o} size {str(s)[:30]} stride {str(st)[:30]}",
                          lambda o=o, s=s, st=st: _legacy({"w": _tensor(_legacy_storage(), o, s, st)},
                                                          {"0": (4, data)})))
    return cases


# -- safetensors ------------------------------------------------------------------------------------------------

def _safetensors(header, data: bytes = bytes(16), length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _entry(dtype="F32", shape=(4,), offsets=(0, 16)) -> dict:
    return {"w": {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}}


def _safetensors_cases() -> list[Case]:
    files = {
        "header length 2**60": _safetensors(_entry(), length=2 ** 60),
        "header length past the end": _safetensors(_entry(), length=10 ** 6),
        "header not JSON": _safetensors(b"{not json"),
        "header not UTF-8": _safetensors(b'{"\xff": 1}'),
        "header a list": _safetensors(b"[1, 2]"),
        "dtype F128": _safetensors(_entry("F128")),
        "dtype C128": _safetensors(_entry("C128", offsets=(0, 32)), bytes(32)),  # C64 is complex64
        "dtype 'x'": _safetensors(_entry("x")),
        "offsets past the end": _safetensors(_entry(offsets=(0, 1600))),
        "offsets reversed": _safetensors(_entry(offsets=(16, 0))),
        "offsets negative": _safetensors(_entry(offsets=(-16, 0))),
        "shape does not match bytes": _safetensors(_entry(shape=(5,))),
        "shape [0, 2**62]": _safetensors(_entry(shape=(0, 2 ** 62), offsets=(0, 0)), b""),
        "shape [0, 10**30]": _safetensors(_entry(shape=(0, 10 ** 30), offsets=(0, 0)), b""),
        "65 dims": _safetensors(_entry(shape=(1,) * 64 + (4,))),
        "5000 dims": _safetensors(_entry(shape=(1,) * 4999 + (4,))),
        "negative dim": _safetensors(_entry(shape=(-4,))),
        "overlapping tensors": _safetensors({**_entry(), "v": {"dtype": "F32", "shape": [4],
                                                               "data_offsets": [0, 16]}}),
        "truncated data": _safetensors(_entry(), bytes(8)),
        "empty file": b"",
        "metadata not strings": _safetensors({**_entry(), "__metadata__": {"a": 1}}),
    }
    return [Case("safetensors", name, lambda raw=raw: raw, safetensors=True) for name, raw in files.items()]


def cases() -> list[Case]:
    return (_ember_cases() + _torch_zip_cases() + _legacy_cases() + _safetensors_cases()
            + [Case("streams", f"endless non-seekable stream: {name}", lambda head=head: EndlessStream(head))
               for name, head in [("magic, then zeros", EMBER_MAGIC_ONLY), ("Ember head, then zeros", EMBER_HEAD),
                                  ("zip entry header, then zeros", ZIP_HEAD), ("junk", b"\x00junk")]])


# -- the run ------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    case: Case
    result: str  # the refusal's class name, "loaded", "hang", or the name of whatever else was raised
    message: str
    size: int  # what loading may hold in memory beyond SLACK: the file's size (a stream's: the spool's memory)
    peak: int
    ran_code: bool = False
    refusal: str = "CheckpointError"

    @property
    def memory_bomb(self) -> bool:
        return self.peak > self.size + SLACK

    @property
    def clean(self) -> bool:
        refused = self.result == self.refusal or (self.result == "loaded" and getattr(self.case, "may_load", False))
        return refused and not self.memory_bomb and not self.ran_code


class _Hung(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hung(f"still loading after {DEADLINE_S} s")


def _load_case(case: Case, target):
    return load_safetensors(target) if getattr(case, "safetensors", False) else ember.load(target)


def attack(case: Case, tmp_dir: str, load: Callable = _load_case, refusal: type = CheckpointError,
           file_name: str = "crafted") -> Outcome:
    """Load one crafted file (``load(case, target)``) under ``tracemalloc`` and a deadline, and say what
    happened: refused with ``refusal``, loaded, hung, or raised something else; whether its payload ran."""
    target = case.make()
    size = ember.serialization.source.SPOOL_MEMORY_BYTES  # a stream: the rest of it belongs on disk
    if isinstance(target, bytes):
        size, path = len(target), os.path.join(tmp_dir, file_name)
        with open(path, "wb") as f:
            f.write(target)
        target = path
    limit = ember.serialization.MAX_STREAM_BYTES
    ember.serialization.MAX_STREAM_BYTES = STREAM_LIMIT
    os.environ["EMBER_HOSTILE_CANARY"] = CANARY
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(DEADLINE_S)
    tracemalloc.start()
    try:
        loaded = load(case, target)
        result, message = "loaded", f"{type(loaded).__name__}"
        del loaded
    except refusal as exc:
        result, message = refusal.__name__, str(exc)
    except _Hung as exc:
        result, message = "hang", str(exc)
    except BaseException as exc:  # noqa: BLE001  (the point is to see whatever escapes)
        if isinstance(exc, KeyboardInterrupt):
            raise
        result, message = type(exc).__name__, str(exc)[:300]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        ember.serialization.MAX_STREAM_BYTES = limit
    ran = os.path.exists(CANARY)
    if ran:
        os.remove(CANARY)
    return Outcome(case, result, message, size, peak, ran, refusal.__name__)


def run_all(tmp_dir: str) -> list[Outcome]:
    ember.load(io.BytesIO(_ember_bytes({"w": ember.ones(2)})))  # warm up lazy imports and caches
    ember.load(io.BytesIO(_torch_zip({"w": _tensor(_float_storage())})))
    return [attack(case, tmp_dir) for case in cases()]


def summary(outcomes: list[Outcome]) -> str:
    """Per category: files, refused cleanly, ran code, raised something unclean, memory bombs, hangs."""
    table: dict[str, collections.Counter] = {}
    for outcome in outcomes:
        counts = table.setdefault(outcome.case.category, collections.Counter())
        counts["files"] += 1
        counts["clean"] += outcome.clean
        counts["ran code"] += outcome.ran_code
        counts["unclean errors"] += outcome.result not in (outcome.refusal, "loaded", "hang")
        counts["memory bombs"] += outcome.memory_bomb
        counts["hangs"] += outcome.result == "hang"
    columns = ("files", "clean", "ran code", "unclean errors", "memory bombs", "hangs")
    lines = [f"{'category':28}" + "".join(f" {c:>{max(len(c), 5)}}" for c in columns)]
    for category, counts in table.items():
        lines.append(f"{category:28}" + "".join(f" {counts[c]:>{max(len(c), 5)}}" for c in columns))
    return "\n".join(lines)


def print_run(outcomes: list, table: str, verbose: bool = False) -> None:
    """An attack run's summary table, its total, and each unclean outcome (every one with ``verbose``)."""
    print(table)
    print(f"total: {len(outcomes)} files, {sum(o.clean for o in outcomes)} clean")
    for outcome in outcomes:
        if not outcome.clean or verbose:
            print(f"  [{outcome.case.category}] {outcome.case.name}: {outcome.result}: {outcome.message[:160]} "
                  f"(peak {outcome.peak / 2 ** 20:.1f} MiB, file {outcome.size / 2 ** 20:.1f} MiB)")


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as directory:
        results = run_all(directory)
    print_run(results, summary(results), "-v" in sys.argv)
