"""An attack run on ``ember.export.load``: crafted ``.pt2`` files, and what loading each one did.

Each file starts from a valid archive (a small model, exported and saved) with one thing changed: the zip
container (bombs, bad offsets, encryption, truncation), the program's JSON (unknown ops, dangling references,
values that would name code, nesting), or the weights (pickles that would run code, huge shapes, damage).

    python tests/hostile_exports.py      # prints the outcome counts per category

An outcome is clean when loading raises ``ExportLoadError`` while allocating at most the file's size plus
``SLACK`` bytes, and no payload ran (each code-running payload would create the file ``CANARY``).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import struct
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from typing import Callable

import ember
from ember import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_checkpoints  # noqa: E402  (its Ember-format crafting helpers)
from ember.export import Dim, ExportLoadError  # noqa: E402

ROOT = "ember_export"
CANARY = hostile_checkpoints.CANARY


@dataclass
class Case:
    category: str
    name: str
    make: Callable[[], object]  # the file's bytes, or a stream


class Payload:
    """Pickles to a call that creates ``CANARY``: if it is ever unpickled, the canary shows it."""

    def __reduce__(self):
        return (open, (CANARY, "w"))


def valid() -> bytes:
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    ep = ember.export.export(model, (ember.randn(2, 4),), dynamic_shapes=({0: Dim("batch")},))
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    return buffer.getvalue()


def members(raw: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def rezip(files: dict, compression=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def with_member(name: str, data: bytes | None) -> Callable[[], bytes]:
    def make() -> bytes:
        files = members(valid())
        if data is None:
            files.pop(f"{ROOT}/{name}")
        else:
            files[f"{ROOT}/{name}"] = data
        return rezip(files)
    return make


def program_edit(edit: Callable[[dict], object]) -> Callable[[], bytes]:
    def make() -> bytes:
        files = members(valid())
        doc = json.loads(files[f"{ROOT}/program.json"])
        replaced = edit(doc)
        files[f"{ROOT}/program.json"] = json.dumps(doc if replaced is None else replaced).encode()
        return rezip(files)
    return make


def weights_of(obj) -> Callable[[], bytes]:
    def make() -> bytes:
        buffer = io.BytesIO()
        ember.save(obj, buffer)
        return with_member("weights.ember", buffer.getvalue())()
    return make


def _first_node(doc: dict) -> dict:
    return doc["nodes"][0]


def _set(path: list, value) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def _central_patch(name: str, field_offsets: tuple, fmt: str, value: int) -> Callable[[], bytes]:
    """The valid archive with fields of ``name``'s central directory entry overwritten."""
    def make() -> bytes:
        raw = bytearray(valid())
        start = 0
        while True:
            at = raw.index(b"PK\x01\x02", start)
            name_length = struct.unpack_from("<H", raw, at + 28)[0]
            if raw[at + 46:at + 46 + name_length].decode() == f"{ROOT}/{name}":
                for field_offset in field_offsets:
                    struct.pack_into(fmt, raw, at + field_offset, value)
                return bytes(raw)
            start = at + 4
    return make


def _parameter_shape(shape: list) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        slot = next(p["slot"] for p in doc["placeholders"] if p["kind"] == "parameter")
        next(meta for meta in doc["metas"] if meta[0] == slot)[1] = shape
    return edit


def _truncated(fraction: float) -> Callable[[], bytes]:
    return lambda: valid()[:int(len(valid()) * fraction)]


def _weights_damaged(at: int) -> Callable[[], bytes]:
    """Weights with the byte at ``at`` flipped (negative: from the end)."""
    def make() -> bytes:
        buffer = io.BytesIO()
        ember.save({"state_dict": {"0.weight": ember.ones(3, 4)}, "constants": {}}, buffer)
        raw = bytearray(buffer.getvalue())
        raw[at] ^= 0x55
        return with_member("weights.ember", bytes(raw))()
    return make


def _huge_tensor_weights(shape: list, nbytes: int) -> Callable[[], bytes]:
    """Weights whose first tensor record claims ``shape``, its CRC and the footer correct (hostile_checkpoints')."""
    def make() -> bytes:
        buffer = io.BytesIO()
        ember.save({"state_dict": {"0.weight": ember.ones(3, 4)}, "constants": {}}, buffer)
        data, header = hostile_checkpoints.split_checkpoint(buffer.getvalue())
        header["tensors"][0]["shape"], header["tensors"][0]["nbytes"] = shape, nbytes
        return with_member("weights.ember", hostile_checkpoints.join_checkpoint(data, header))()
    return make


def _deep_json() -> bytes:
    return with_member("program.json", b"[" * 200000 + b"]" * 200000)()


def _many_members() -> bytes:
    files = members(valid())
    files.update({f"{ROOT}/extra/{i}": b"" for i in range(5000)})
    return rezip(files)


def _encrypted_flag() -> bytes:
    raw = bytearray(valid())
    at = raw.index(b"PK\x01\x02")
    while at >= 0:
        struct.pack_into("<H", raw, at + 8, struct.unpack_from("<H", raw, at + 8)[0] | 1)
        at = raw.find(b"PK\x01\x02", at + 4)
    return bytes(raw)


def cases() -> list[Case]:
    payload_pickle = pickle.dumps(Payload())
    node_args = ["nodes", 0, "args"]
    return [
        Case("container", "not a zip", lambda: b"hello, this is not an archive" * 10),
        Case("container", "empty file", lambda: b""),
        Case("container", "truncated to half", _truncated(0.5)),
        Case("container", "truncated before the central directory's end", _truncated(0.98)),
        Case("container", "a pickle instead of a zip", lambda: payload_pickle),
        Case("container", "deflated members (a 64 MB zip bomb)", lambda: rezip(
            {**members(valid()), f"{ROOT}/program.json": bytes(64 * 2 ** 20)}, zipfile.ZIP_DEFLATED)),
        Case("container", "encrypted members", _encrypted_flag),
        Case("container", "no program.json", with_member("program.json", None)),
        Case("container", "no weights", with_member("weights.ember", None)),
        Case("container", "no version", with_member("version", None)),
        Case("container", "version 99", with_member("version", b"99")),
        Case("container", "5000 members", _many_members),
        Case("container", "weights offset past the end", _central_patch("weights.ember", (42,), "<I", 2 ** 31)),
        Case("container", "weights offset at another member", _central_patch("weights.ember", (42,), "<I", 0)),
        Case("container", "weights size past the end", _central_patch("weights.ember", (20, 24), "<I", 2 ** 31)),
        Case("container", "program size claims 2 GB", _central_patch("program.json", (20, 24), "<I", 2 ** 31)),
        Case("program", "not JSON", with_member("program.json", b"{not json")),
        Case("program", "JSON nested 200000 deep", _deep_json),
        Case("program", "wrong format", program_edit(_set(["format"], "torch.export"))),
        Case("program", "format version 2", program_edit(_set(["version"], 2))),
        Case("program", "a list instead of an object", program_edit(lambda doc: [doc])),
        Case("program", "an op named os.system", program_edit(_set(["nodes", 0, "target"], "os.system"))),
        Case("program", "an op of an unloaded library", program_edit(_set(["nodes", 0, "target"], "evil::op"))),
        Case("program", "an op with too few arguments", program_edit(_set(node_args, []))),
        Case("program", "a dangling reference", program_edit(_set(node_args + [0], {"$": "ref", "v": 999}))),
        Case("program", "a negative slot", program_edit(_set(node_args + [0], {"$": "ref", "v": -1}))),
        Case("program", "a slot of 2**40", program_edit(_set(node_args + [0], {"$": "ref", "v": 2 ** 40}))),
        Case("program", "a pickle value", program_edit(_set(node_args + [0], {"$": "pickle",
                                                                              "v": payload_pickle.hex()}))),
        Case("program", "an object value naming a global", program_edit(
            _set(node_args + [1], {"$": "object", "v": "os.system"}))),
        Case("program", "an extra field in a value", program_edit(
            _set(node_args + [0], {"$": "ref", "v": 0, "w": 1}))),
        Case("program", "an unknown dtype", program_edit(_set(["metas", 0, 2], "object"))),
        Case("program", "an unknown device", program_edit(_set(node_args + [1], {"$": "device", "v": "evil:0"}))),
        Case("program", "values nested 40 deep", program_edit(_set(node_args + [1], [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
            [[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]))),
        Case("program", "a symbol no input has", program_edit(_set(node_args + [1], {"$": "sym",
                                                                                     "v": [[["ghost"], 1]]}))),
        Case("program", "a symbolic size of 1000 terms", program_edit(_set(node_args + [1], {"$": "sym", "v": [
            [["batch"], 1]] * 1000}))),
        Case("program", "a placeholder of an unknown kind", program_edit(_set(["placeholders", 0, "kind"], "code"))),
        Case("program", "a placeholder the weights lack", program_edit(_set(["placeholders", 0, "target"], "ghost"))),
        Case("program", "a user input with a bad path", program_edit(_set(["placeholders", 2, "path"], [7]))),
        Case("program", "a result read from nowhere", program_edit(_set(["result"], {"$": "ref", "v": 4242}))),
        Case("program", "inputs that are not the placeholders", program_edit(_set(["in_tree"], [[], {"$": "dict",
                                                                                                     "v": []}]))),
        Case("program", "a parameter shape that disagrees", program_edit(_parameter_shape([3, 5]))),
        Case("program", "a non-finite float as a number", program_edit(_set(node_args + [1], float("nan")))),
        Case("weights", "a pickled payload beside the tensors", weights_of(
            {"state_dict": {"0.weight": ember.ones(3, 4)}, "constants": {}, "payload": Payload()})),
        Case("weights", "a raw pickle", with_member("weights.ember", payload_pickle)),
        Case("weights", "a list instead of the dicts", weights_of([ember.ones(3, 4)])),
        Case("weights", "a tensor of 2**40 elements", _huge_tensor_weights([2 ** 40], 2 ** 42)),
        Case("weights", "a tensor of 2**62 x 0 elements", _huge_tensor_weights([2 ** 62, 0], 0)),
        Case("weights", "a tensor of 5000 dimensions", _huge_tensor_weights([1] * 5000, 4)),
        Case("weights", "a damaged tensor", _weights_damaged(64)),
        Case("weights", "a damaged header", _weights_damaged(-40)),
        Case("weights", "empty", with_member("weights.ember", b"")),
        Case("streams", "an endless non-seekable stream", lambda: hostile_checkpoints.EndlessStream(b"PK\x03\x04")),
    ]


def _load(case: Case, target):
    return ember.export.load(target)


def attack(case: Case, tmp_dir: str) -> hostile_checkpoints.Outcome:
    return hostile_checkpoints.attack(case, tmp_dir, _load, ExportLoadError, "crafted.pt2")


def run_all(tmp_dir: str) -> list[hostile_checkpoints.Outcome]:
    ember.export.load(io.BytesIO(valid()))  # warm up lazy imports
    return [attack(case, tmp_dir) for case in cases()]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        results = run_all(directory)
    hostile_checkpoints.print_run(results, hostile_checkpoints.summary(results), "-v" in sys.argv)
