"""``save`` and ``load``: an exported program in one ``.pt2`` zip, read back without running anything from it.

    ember_export/version          "1"
    ember_export/program.json     the graph (``serialized``)
    ember_export/weights.ember    {"state_dict": ..., "constants": ...} as an Ember checkpoint
    ember_export/extra/NAME       the caller's extra files

Every member is stored uncompressed, so a reader's memory is bounded by the file itself and a zip bomb is
refused before it is inflated; the weights are read in place through a window onto the zip, by ``ember.load``
with ``weights_only=True`` (its checks of offsets, sizes and CRCs apply); the graph is JSON whose every value is
checked (``encoding``). A path is written atomically: a failed save leaves the previous file whole.
"""
from __future__ import annotations

import io
import json
import os
import struct
import zipfile

from ..serialization.atomic import atomic_path
from ..serialization.errors import CheckpointError, describe_file
from ..serialization.source import names_a_zip_entry, spool
from .errors import ExportLoadError
from .program import ExportedProgram
from .serialized import from_json, to_json

ROOT = "ember_export"
VERSION = "1"
MAX_PROGRAM_BYTES = 256 * 2 ** 20
MAX_MEMBERS = 4096
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


def save(ep: ExportedProgram, f, *, extra_files: dict | None = None, opset_version: dict | None = None,
         pickle_protocol: int = 2) -> None:
    """Write ``ep`` to ``f`` (a path or a binary file object). ``extra_files`` maps names to str or bytes
    contents stored beside it; ``opset_version`` and ``pickle_protocol`` are PyTorch's and change nothing."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"ember.export.save: expected an ExportedProgram, got {type(ep).__name__}")
    program = json.dumps(to_json(ep.graph), separators=(",", ":")).encode()
    extras = {name: content.encode() if isinstance(content, str) else bytes(content)
              for name, content in (extra_files or {}).items()}
    if isinstance(f, (str, os.PathLike)):
        with atomic_path(f) as temp, open(temp, "wb") as out:
            _write(out, ep, program, extras)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ember.export.save: f must be a path or a binary file object, got {type(f).__name__}")
    _write(f, ep, program, extras)


def _write(out, ep: ExportedProgram, program: bytes, extras: dict) -> None:
    from ..serialization import save as save_checkpoint

    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        archive.writestr(f"{ROOT}/version", VERSION)
        archive.writestr(f"{ROOT}/program.json", program)
        with archive.open(f"{ROOT}/weights.ember", "w", force_zip64=True) as member:
            save_checkpoint({"state_dict": ep.state_dict, "constants": ep.constants}, member)
        for name, content in extras.items():
            archive.writestr(f"{ROOT}/extra/{_extra_name(name)}", content)


def _extra_name(name) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise ValueError(f"ember.export.save: extra file names must be plain names, not {name!r}")
    return name


def load(f, *, extra_files: dict | None = None, expected_opset_version: dict | None = None,
         map_location=None) -> ExportedProgram:
    """Read what ``save`` wrote. Nothing from the file runs: the graph names ops of Ember's schema (custom ops
    need their library imported first) and the weights load as with ``ember.load(weights_only=True)``.
    ``extra_files`` maps names to fill with the stored contents; ``map_location`` is ``ember.load``'s."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load(stream, f, extra_files, map_location)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.export.load: f must be a path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("ember.export.load: the file is open in text mode; open it in binary mode ('rb')")
    if not (hasattr(f, "seekable") and f.seekable()):
        try:
            f = spool(f, _recognise)
        except CheckpointError as error:
            raise ExportLoadError(f"ember.export.load: {describe_file(f)}: {error}") from None
    return _load(f, f, extra_files, map_location)


def _recognise(head: bytes) -> None:
    """An archive ``save`` wrote starts with a zip entry header: anything else ends a stream at its first bytes."""
    if not names_a_zip_entry(head):
        raise CheckpointError(f"not an archive written by ember.export.save: it starts with {head[:8]!r}")


def _load(stream, name, extra_files: dict | None, map_location) -> ExportedProgram:
    where = f"ember.export.load: {describe_file(name)}"
    try:
        archive = zipfile.ZipFile(stream)
        members = _members(archive)
        version = _read_small(archive, members, "version", 64)
        if version.decode(errors="replace") != VERSION:
            raise ExportLoadError(f"archive version {version[:16]!r}; this Ember reads {VERSION}")
        text = _read_small(archive, members, "program.json", MAX_PROGRAM_BYTES)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise ExportLoadError(f"program.json is not valid JSON ({type(error).__name__})") from None
        program = from_json(doc)
        weights = _weights(stream, members, map_location)
        _check_state(program, weights)
        for key in (extra_files or {}):
            extra_files[key] = _read_small(archive, members, f"extra/{key}", MAX_PROGRAM_BYTES).decode()
    except CheckpointError as error:
        message = str(error).removeprefix("ember.load: ")
        raise ExportLoadError(f"{where}: {message}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, struct.error, OSError, ValueError,
            NotImplementedError, RuntimeError, KeyError) as error:
        raise ExportLoadError(f"{where}: not a readable ember.export archive ({type(error).__name__}: "
                              f"{str(error)[:200]})") from None
    return ExportedProgram(program, weights["state_dict"], weights["constants"])


def _members(archive: zipfile.ZipFile) -> dict:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ExportLoadError(f"the archive has {len(infos)} members; an exported program has a handful")
    members = {}
    for info in infos:
        if info.flag_bits & 0x1:
            raise ExportLoadError(f"member {info.filename} is encrypted")
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ExportLoadError(f"member {info.filename} is compressed; ember.export.save stores every member "
                                  f"as it is, and a compressed one is refused rather than inflated")
        members[info.filename] = info
    for required in ("version", "program.json", "weights.ember"):
        if f"{ROOT}/{required}" not in members:
            raise ExportLoadError(f"the archive has no {ROOT}/{required}: not written by ember.export.save")
    return members


def _read_small(archive: zipfile.ZipFile, members: dict, name: str, limit: int) -> bytes:
    info = members.get(f"{ROOT}/{name}")
    if info is None:
        raise ExportLoadError(f"the archive has no {ROOT}/{name}")
    if info.file_size > limit:
        raise ExportLoadError(f"{ROOT}/{name} is {info.file_size} bytes, more than the {limit} it may be")
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise ExportLoadError(f"{ROOT}/{name} runs past {limit} bytes")
    return data


class _Window(io.RawIOBase):
    """Bytes ``start`` to ``start + size`` of a seekable stream, as a seekable stream of their own."""

    def __init__(self, stream, start: int, size: int, name: str) -> None:
        self.stream, self.start, self.size, self.position = stream, start, size, 0
        self.name = name  # how ember.load's errors name it

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.position, os.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer) -> int:
        count = max(0, min(len(buffer), self.size - self.position))
        if not count:
            return 0
        self.stream.seek(self.start + self.position)
        data = self.stream.read(count)
        buffer[:len(data)] = data
        self.position += len(data)
        return len(data)


def _weights(stream, members: dict, map_location) -> dict:
    """The weights member, loaded in place by ``ember.load`` (``weights_only``) through a window onto the zip."""
    from ..serialization import load as load_checkpoint

    info = members[f"{ROOT}/weights.ember"]
    stream.seek(0, os.SEEK_END)
    total = stream.tell()
    stream.seek(info.header_offset)
    header = stream.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise ExportLoadError("the weights member's local header is missing or damaged")
    fields = _LOCAL_HEADER.unpack(header)
    start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]
    if start + info.file_size > total:
        raise ExportLoadError(f"the weights member runs to byte {start + info.file_size}, past the end of the "
                              f"file ({total} bytes): it is truncated or its offsets are wrong")
    window = _Window(stream, start, info.file_size, info.filename)
    weights = load_checkpoint(window, map_location=map_location, weights_only=True)
    Tensor = _tensor_type()
    if not isinstance(weights, dict) or set(weights) != {"state_dict", "constants"} or any(
            not isinstance(part, dict) or any(not isinstance(k, str) or not isinstance(v, Tensor)
                                              for k, v in part.items()) for part in weights.values()):
        raise ExportLoadError("the weights are not {'state_dict': {name: tensor}, 'constants': {name: tensor}}")
    return weights


def _tensor_type():
    from ..dispatch.execution import links

    return links.tensor.type


def _check_state(program, weights: dict) -> None:
    """Each parameter, buffer and constant the program reads is in the weights, with the shape it reads."""
    for p in program.placeholders:
        if p.kind == "user_input":
            continue
        tensor = weights["state_dict"].get(p.target)
        if tensor is None:
            tensor = weights["constants"].get(p.target)
        if tensor is None:
            raise ExportLoadError(f"the program reads the {p.kind} '{p.target}', which the weights do not hold")
        meta = program.metas.get(p.slot)
        if meta is not None and all(isinstance(n, int) for n in meta.shape) and tuple(tensor.shape) != meta.shape:
            raise ExportLoadError(f"the weights hold '{p.target}' with shape {tuple(tensor.shape)}; the program "
                                  f"reads it with shape {meta.shape}")


__all__ = ["save", "load"]
