"""ember.save / ember.load, safetensors interop and tensor pickling.

The checkpoint layout is restated here (``_FOOTER``) on purpose: the tests that craft damaged files
then also pin the documented on-disk format.
"""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib
from collections import OrderedDict

import ml_dtypes
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the interop tests need it; everything else does not
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
from ember.serialization import CheckpointError

from hostile_checkpoints import join_checkpoint, split_checkpoint

_FOOTER = struct.Struct("<QQI8s")  # header offset, header length, header CRC-32, b"EMBEREND"

ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
              ember.float16, ember.bfloat16, ember.float32, ember.float64]
AVAILABLE_DEVICES = [name for name, status in ember.backends.available().items() if status == "available"]


def _sample(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 50
    if dtype is ember.bool:
        return ember.tensor(values > 0)
    return ember.tensor(values, dtype=dtype)


def _same(a, b) -> bool:
    """Equal dtype, shape and bits (NaNs included)."""
    if a.dtype is not b.dtype or a.shape != b.shape:
        return False
    return a._host().tobytes() == np.ascontiguousarray(b._host()).tobytes()


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    buffer.seek(0)
    return ember.load(buffer, **load_kwargs)


def _checkpoint_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    return buffer.getvalue()


def _load_bytes(raw: bytes, **kwargs):
    return ember.load(io.BytesIO(raw), **kwargs)


# -- round trips ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)], ids=str)
def test_tensors_of_every_dtype_and_shape_round_trip_bit_exactly(tmp_path, dtype, shape):
    t = _sample(dtype, shape)
    ember.save(t, tmp_path / "t.ember")
    out = ember.load(tmp_path / "t.ember")
    assert _same(out, t) and out.device == t.device


def test_special_float_values_survive_in_low_precision():
    values = [math.nan, math.inf, -math.inf, -0.0, 1e-8, 65504.0]
    for dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        t = ember.tensor(values, dtype=dtype)
        assert _same(_roundtrip(t), t)


def test_views_are_saved_as_their_own_contiguous_values():
    base = ember.arange(10000, dtype=ember.float32).reshape(100, 100)
    views = {"transposed": base.T, "strided": base[::3, 1::7], "row": base[5], "corner": base[:2, :2]}
    out = _roundtrip(views)
    for name, view in views.items():
        assert out[name].is_contiguous() and out[name].tolist() == view.tolist(), name
    assert out["corner"].data_ptr_id() != out["row"].data_ptr_id()
    # a small view of a big tensor costs only its own bytes
    assert len(_checkpoint_bytes(base[:2, :2])) < 1000 < base.numel()


def test_same_tensor_object_loads_as_one_tensor_and_is_stored_once():
    w = ember.randn(256, 256)
    once, twice = _checkpoint_bytes({"a": w}), _checkpoint_bytes({"a": w, "b": w, "c": [w, (w,)]})
    assert len(twice) - len(once) < 200
    out = _roundtrip({"a": w, "b": w, "c": [w, (w,)], "other": w.clone()})
    assert out["a"] is out["b"] is out["c"][0] is out["c"][1][0]
    assert out["other"] is not out["a"] and _same(out["other"], w)


def test_state_dict_keeps_order_type_and_metadata():
    state = OrderedDict((f"layer{i}.weight", ember.randn(3, 3)) for i in (3, 1, 2))
    state["layer0.bias"] = ember.zeros(3, dtype=ember.bfloat16)
    state._metadata = OrderedDict([("", {"version": 1}), ("layer3", {"version": 2})])
    out = _roundtrip(state)
    assert type(out) is OrderedDict and list(out) == list(state)
    assert out._metadata == state._metadata and type(out._metadata) is OrderedDict
    assert all(_same(out[k], state[k]) for k in state)


def test_optimizer_state_dict_with_int_keys_tuples_and_special_floats():
    state = {
        "state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.randn(4), "exp_avg_sq": ember.rand(4)},
                  7: {"momentum_buffer": None}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
                          "foreach": None, "maximize": False, "params": [0, 7], "initial_lr": 0.1,
                          "nan": math.nan, "inf": -math.inf, "name": "héllo ☃ \udc80"}],
    }
    out = _roundtrip(state)
    assert list(out["state"]) == [0, 7] and all(type(k) is int for k in out["state"])
    assert _same(out["state"][0]["exp_avg"], state["state"][0]["exp_avg"])
    group, saved = out["param_groups"][0], state["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and type(group["betas"]) is tuple
    assert type(group["weight_decay"]) is int and type(group["lr"]) is float and group["amsgrad"] is False
    assert math.isnan(group["nan"]) and group["inf"] == -math.inf and group["name"] == saved["name"]
    assert {k: v for k, v in group.items() if k != "nan"} == {k: v for k, v in saved.items() if k != "nan"}


def test_module_and_optimizer_state_dicts_restore_training_state(tmp_path):
    from ember import nn, optim
    model = nn.Linear(4, 3)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    model(ember.randn(5, 4)).pow(2).sum().backward()
    opt.step()
    ember.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 1}, tmp_path / "ckpt")

    checkpoint = ember.load(tmp_path / "ckpt")
    restored = nn.Linear(4, 3)
    restored.load_state_dict(checkpoint["model"])
    restored_opt = optim.Adam(restored.parameters(), lr=1e-2)
    restored_opt.load_state_dict(checkpoint["optim"])
    for a, b in zip(model.parameters(), restored.parameters()):
        assert _same(a.detach(), b.detach())
    x = ember.randn(5, 4)
    for m, o in ((model, opt), (restored, restored_opt)):  # one more identical step on both
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), restored.parameters()):
        assert _same(a.detach(), b.detach())


def test_python_values_keep_their_exact_types():
    values = [None, True, False, 0, -1, 2 ** 100, -2 ** 70, 0.1, -0.0, 1e308, 5e-324, "", "x" * 1000, b"",
              b"\x00\xff" * 500, [], (), {}, OrderedDict(), [[[]]], ((1,), [2]), {(1, "a"): {None: 1, 2.5: 2}},
              {True: "bool key", 1.5: "float key", "1": "str key", 2: "int key"}]
    out = _roundtrip(values)
    assert out == values
    assert [type(v) for v in out] == [type(v) for v in values]
    assert math.copysign(1, out[8]) == -1
    assert type(out[-3]) is tuple and type(out[-3][1]) is list


def test_requires_grad_and_parameters_are_restored():
    from ember.nn.parameter import Parameter
    leaf = ember.randn(3).requires_grad_()
    param = Parameter(ember.randn(2, 2))
    out = _roundtrip({"leaf": leaf, "param": param, "computed": leaf * 2, "plain": ember.randn(2)})
    assert out["leaf"].requires_grad and out["leaf"].is_leaf and not isinstance(out["leaf"], Parameter)
    assert isinstance(out["param"], Parameter) and out["param"].requires_grad
    assert out["computed"].requires_grad and out["computed"].grad_fn is None
    assert not out["plain"].requires_grad


def test_loaded_tensors_are_writable_and_independent():
    state = {"a": ember.zeros(4), "b": ember.zeros(4)}
    out = _roundtrip(state)
    out["a"].add_(1)
    assert out["a"].tolist() == [1, 1, 1, 1] and out["b"].tolist() == [0, 0, 0, 0]
    assert state["a"].tolist() == [0, 0, 0, 0]


def test_file_objects_paths_and_streams(tmp_path):
    obj = {"w": ember.randn(8), "n": 3}
    buffer = io.BytesIO(b"prefix")
    buffer.seek(6)
    ember.save(obj, buffer)
    end = buffer.tell()
    buffer.seek(6)
    assert _same(ember.load(buffer)["w"], obj["w"]) and buffer.tell() == end

    ember.save(obj, str(tmp_path / "as_str"))
    assert ember.load(str(tmp_path / "as_str"))["n"] == 3
    with open(tmp_path / "handle", "wb") as f:
        ember.save(obj, f)
    with open(tmp_path / "handle", "rb") as f:
        assert _same(ember.load(f)["w"], obj["w"])

    class Pipe(io.RawIOBase):  # not seekable, like a socket
        def __init__(self, data):
            self._data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._data.readinto(b)

    assert _same(ember.load(Pipe(_checkpoint_bytes(obj)))["w"], obj["w"])
    with open(tmp_path / "handle", "r") as f, pytest.raises(TypeError, match="binary mode"):
        ember.load(f)


@pytest.mark.parametrize("device", AVAILABLE_DEVICES)
def test_round_trip_on_every_available_device(device):
    t = ember.randn(4, 5, device=device)
    supported = ember.backends.registered()[ember.device(device).type].supported_dtypes(t.device.index)
    low = next(d for d in (ember.bfloat16, ember.float16, ember.float64, ember.int64) if d in supported)
    out = _roundtrip({"t": t, "h": t.to(low)})
    assert out["t"].device == t.device and _same(out["t"], t) and _same(out["h"], t.to(low))
    out = _roundtrip({"t": t}, map_location="cpu")
    assert out["t"].device == ember.device("cpu") and out["t"].tolist() == t.tolist()


# -- what save refuses: objects pickle cannot handle (everything else is saved, see test_serialization_objects)

class Unpicklable:
    def __reduce__(self):
        raise TypeError("Unpicklable objects refuse to be pickled")


@pytest.mark.parametrize("obj, where", [
    ({"layers": [ember.zeros(1), 2, Unpicklable()]}, r"obj\['layers'\]\[2\]"),
    (OrderedDict(a={"b": (1, {3: Unpicklable()})}), r"obj\['a'\]\['b'\]\[1\]\[3\]"),
    ({Unpicklable(): 1}, r"obj\[<.*Unpicklable.*>\] \(as a dict key\)"),
    ([{1, lambda: 2}], r"obj\[0\]"),
    (Unpicklable(), r"at obj:"),
])
def test_unpicklable_objects_name_the_type_and_the_path(tmp_path, obj, where):
    with pytest.raises(TypeError, match=where) as info:
        ember.save(obj, tmp_path / "x")
    assert "Unpicklable" in str(info.value) or "set" in str(info.value)
    assert "cannot be pickled" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_unpicklable_objects_leave_the_stream_untouched():
    buffer = io.BytesIO()
    with pytest.raises(TypeError, match=r"numpy.ndarray at obj\['x'\]"):
        ember.save({"w": ember.zeros(3), "x": np.array([Unpicklable()], dtype=object)}, buffer)
    assert buffer.getvalue() == b""


def test_reference_cycles_are_pickled_whole():
    loop = {"a": []}
    loop["a"].append(loop)
    out = _roundtrip(loop)
    assert out["a"][0] is out
    shared = [1]
    assert _roundtrip([shared, shared]) == [[1], [1]]  # plain containers form a tree in the JSON header


# -- what load refuses: pickles, foreign and damaged files ------------------------------------------------

class RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class RunsPython:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",)


@pytest.fixture
def no_unpickling(monkeypatch):
    """Fail the test if anything so much as tries to unpickle (classes stay subclassable for torch)."""
    def forbidden(*args, **kwargs):
        raise AssertionError("ember.load tried to unpickle")
    for name in ("load", "loads", "_load", "_loads"):
        monkeypatch.setattr(pickle, name, forbidden)
    for name in ("Unpickler", "_Unpickler"):
        monkeypatch.setattr(pickle, name, type(name, (getattr(pickle, name),), {"load": forbidden}))


@pytest.mark.parametrize("payload", [RunsShell, RunsPython])
@pytest.mark.parametrize("protocol", [0, 1, 2, 4, 5])
def test_malicious_pickles_are_refused_without_running(tmp_path, payload, protocol, no_unpickling):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"state_dict": payload(marker)}, protocol=protocol))
    with pytest.raises(CheckpointError, match="pickle.*can run arbitrary code"):
        ember.load(path)
    with pytest.raises(CheckpointError, match="pickle"):
        ember.load(path, weights_only=False)
    assert not marker.exists()


def test_checkpoint_error_is_both_runtime_and_value_error():
    assert issubclass(CheckpointError, RuntimeError) and issubclass(CheckpointError, ValueError)
    assert ember.serialization.CheckpointError is CheckpointError


@pytest.mark.parametrize("raw, message", [
    (b"", "too short"),
    (b"\x89EMB", "too short"),
    (b"hello world, this is text", "not an Ember checkpoint"),
    (b"\x00" * 100, "not an Ember checkpoint"),
])
def test_foreign_files_are_refused(raw, message):
    with pytest.raises(CheckpointError, match=message):
        _load_bytes(raw)


def test_truncation_anywhere_is_detected():
    raw = _checkpoint_bytes({"w": ember.randn(100), "b": b"x" * 300, "n": [1, 2, 3]})
    for cut in list(range(0, 80)) + list(range(80, len(raw), 7)) + [len(raw) - 1]:
        with pytest.raises(CheckpointError):
            _load_bytes(raw[:cut])
    with pytest.raises(CheckpointError, match="no end marker.*truncated"):
        _load_bytes(raw[:-10])


def test_flipped_bits_fail_the_checksums():
    w = ember.randn(100)
    raw = bytearray(_checkpoint_bytes({"model": {"w": w}}))
    data, _ = split_checkpoint(bytes(raw))
    raw[len(data) - 8] ^= 0x10  # inside w's values
    with pytest.raises(CheckpointError, match=r"obj\['model'\]\['w'\] fails its CRC-32"):
        _load_bytes(bytes(raw))
    raw = bytearray(_checkpoint_bytes({"model": {"w": w}}))
    raw[len(data) + 3] ^= 0x01  # inside the header
    with pytest.raises(CheckpointError, match="header fails its CRC-32"):
        _load_bytes(bytes(raw))


def _crafted(change):
    """A valid checkpoint whose header ``change(header)`` has edited (footer and CRC fixed up)."""
    data, header = split_checkpoint(_checkpoint_bytes({"w": ember.randn(4, 4), "b": b"abc"}))
    change(header)
    return join_checkpoint(data, header)


def _set_tensor(field, value):
    return lambda h: h["tensors"][0].__setitem__(field, value)


@pytest.mark.parametrize("change, message", [
    (_set_tensor("offset", 10 ** 12), "out of range"),
    (_set_tensor("offset", 3), "out of range"),
    (_set_tensor("nbytes", -1), "out of range"),
    (_set_tensor("offset", "64"), "integer offset"),
    (_set_tensor("dtype", "complex32"), "unknown dtype 'complex32'"),
    (_set_tensor("dtype", "float64"), "shape .* needs 128"),
    (_set_tensor("shape", [4, -4]), "invalid shape"),
    (_set_tensor("shape", [4, True]), "invalid shape"),
    (_set_tensor("device", "not a device!"), "invalid device"),
    (_set_tensor("requires_grad", "yes"), "non-boolean"),
    (lambda h: h["root"]["items"][0][1].__setitem__("index", 5), r"refers to tensor #5, but the file has 1"),
    (lambda h: h["root"]["items"][0][1].__setitem__("$", "pickle"), "unknown node type 'pickle'"),
    (lambda h: h["root"]["items"][1][1].__setitem__("nbytes", 10 ** 9), "bytes at obj\\['b'\\].*out of range"),
    (lambda h: h["root"].__setitem__("items", [[[1], 2]]), "unhashable key"),
    (lambda h: h["root"].__setitem__("items", [[1]]), r"not a \[key, value\] pair"),
    (lambda h: h.__setitem__("root", {"$": "float", "value": "1e400"}), "invalid special float"),
    (lambda h: h.__setitem__("root", {"$": "odict", "items": [], "attrs": {"__class__": 1}}), "invalid attributes"),
    (lambda h: h.pop("tensors"), "lacks its 'tensors'"),
])
def test_crafted_headers_are_refused_clearly(change, message):
    with pytest.raises(CheckpointError, match=message):
        _load_bytes(_crafted(change))


def test_malformed_header_json_deep_nesting_and_oversized_headers(monkeypatch):
    data, _ = split_checkpoint(_checkpoint_bytes([1]))
    text = b"{not json"
    with pytest.raises(CheckpointError, match="not valid JSON"):
        _load_bytes(data + text + _FOOTER.pack(len(data), len(text), zlib.crc32(text), b"EMBEREND"))
    for depth in (600, 100000):  # deeper than the decoder recurses, then deeper than the JSON parser does
        text = ('{"tensors": [], "root": ' + "[" * depth + "]" * depth + "}").encode()
        with pytest.raises(CheckpointError, match="not valid JSON|nested too deeply"):
            _load_bytes(data + text + _FOOTER.pack(len(data), len(text), zlib.crc32(text), b"EMBEREND"))
    huge = data + _FOOTER.pack(len(data), 2 ** 40, 0, b"EMBEREND")
    with pytest.raises(CheckpointError, match="header too large"):
        _load_bytes(huge)
    monkeypatch.setattr(ember.serialization, "MAX_HEADER_BYTES", 10)
    with pytest.raises(CheckpointError, match="header too large: .* limit 10"):
        _load_bytes(_checkpoint_bytes({"a": 1}))


def test_footer_inconsistent_with_file_size_and_future_versions():
    raw = _checkpoint_bytes({"w": ember.randn(3)})
    with pytest.raises(CheckpointError, match="does not fit a file"):
        _load_bytes(raw[:-_FOOTER.size] + b"junk" + raw[-_FOOTER.size:])
    future = raw[:8] + struct.pack("<I", 3) + raw[12:]
    with pytest.raises(CheckpointError, match="format version 3.*newer Ember"):
        _load_bytes(future)


def test_safetensors_file_given_to_load_points_at_load_safetensors(tmp_path):
    ember.serialization.save_safetensors({"w": ember.randn(2)}, tmp_path / "w.safetensors")
    with pytest.raises(CheckpointError, match="load_safetensors"):
        ember.load(tmp_path / "w.safetensors")


# -- atomic writes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("failure", [RuntimeError("device lost"), OSError(28, "No space left on device"),
                                     KeyboardInterrupt()], ids=["error", "disk-full", "interrupt"])
def test_a_failure_midway_keeps_the_previous_checkpoint_and_leaves_no_temp_file(tmp_path, monkeypatch, failure):
    path = tmp_path / "ckpt.ember"
    old = {"w": ember.randn(64), "version": 1}
    ember.save(old, path)
    before = path.read_bytes()

    real_host, calls = ember.Tensor._host, []

    def failing_host(self):  # a device-to-host copy that fails after some data is written
        calls.append(self)
        if len(calls) == 3:
            raise failure
        return real_host(self)

    monkeypatch.setattr(ember.Tensor, "_host", failing_host)
    with pytest.raises(type(failure)):
        ember.save({f"w{i}": ember.randn(10000) for i in range(5)}, path)
    monkeypatch.undo()
    assert len(calls) == 3
    assert os.listdir(tmp_path) == ["ckpt.ember"] and path.read_bytes() == before
    assert ember.load(path)["version"] == 1

    with pytest.raises(TypeError):
        ember.save({"w": ember.randn(3), "bad": Unpicklable()}, path)
    assert os.listdir(tmp_path) == ["ckpt.ember"] and path.read_bytes() == before


def test_overwrite_keeps_permissions_and_writes_through_symlinks(tmp_path):
    path = tmp_path / "ckpt"
    ember.save({"v": 1}, path)
    os.chmod(path, 0o640)
    ember.save({"v": 2}, path)
    assert os.stat(path).st_mode & 0o777 == 0o640 and ember.load(path)["v"] == 2
    link = tmp_path / "latest"
    link.symlink_to(path)
    ember.save({"v": 3}, link)
    assert link.is_symlink() and ember.load(path)["v"] == 3
    assert sorted(os.listdir(tmp_path)) == ["ckpt", "latest"]


_KILLED_WRITER = textwrap.dedent("""
    import sys, time
    import ember
    path = sys.argv[1]
    real_host, calls = ember.Tensor._host, []
    def slow_host(self):
        calls.append(1)
        if len(calls) == 4:  # three tensors are in the temporary file by now
            print("midway", flush=True)
            time.sleep(120)
        return real_host(self)
    ember.Tensor._host = slow_host
    ember.save({f"w{i}": ember.ones(2_000_000) for i in range(8)}, path)
""")

_LOOPING_WRITER = textwrap.dedent("""
    import itertools, sys
    import ember
    path = sys.argv[1]
    for i in itertools.count():
        ember.save({"i": i, "w": ember.full((4_000_000,), float(i))}, path)
        print(i, flush=True)
""")


def _spawn(script: str, path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)


def test_sigkill_mid_write_leaves_the_previous_checkpoint_intact(tmp_path):
    path = tmp_path / "ckpt.ember"
    ember.save({"w": ember.zeros(3), "step": 41}, path)
    before = path.read_bytes()
    child = _spawn(_KILLED_WRITER, path)
    try:
        assert child.stdout.readline().strip() == "midway"
        temps = [name for name in os.listdir(tmp_path) if name != "ckpt.ember"]
        assert len(temps) == 1 and os.path.getsize(tmp_path / temps[0]) >= 3 * 8_000_000
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert path.read_bytes() == before and ember.load(path)["step"] == 41
    # the orphaned temporary file is recognisably incomplete, and hidden beside the checkpoint
    assert temps[0].startswith(".ckpt.ember.") and temps[0].endswith(".tmp")
    with pytest.raises(CheckpointError, match="truncated"):
        ember.load(tmp_path / temps[0])


def test_sigkill_at_an_arbitrary_moment_always_leaves_a_complete_checkpoint(tmp_path):
    path = tmp_path / "ckpt.ember"
    child = _spawn(_LOOPING_WRITER, path)
    try:
        for _ in range(3):  # kill while later saves are in progress
            child.stdout.readline()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    out = ember.load(path)
    assert out["i"] >= 2 and out["w"].shape == (4_000_000,)
    assert out["w"][-1].item() == out["w"][0].item() == float(out["i"])


# -- map_location ---------------------------------------------------------------------------------------

def _saved_on(device: str) -> bytes:
    """A checkpoint as another machine would write it, with its tensors on ``device``."""
    data, header = split_checkpoint(_checkpoint_bytes({"w": ember.arange(6.0), "b": ember.ones(2)}))
    for record in header["tensors"]:
        record["device"] = device
    return join_checkpoint(data, header)


def test_unavailable_saved_device_suggests_map_location():
    missing = next((name for name in ("cuda", "opencl") if name not in AVAILABLE_DEVICES), None)
    if missing is None:
        pytest.skip("every bundled backend is available here")
    with pytest.raises(ember.DeviceError, match=rf"obj\['w'\] was saved on {missing}:0.*map_location='cpu'"):
        _load_bytes(_saved_on(f"{missing}:0"))
    with pytest.raises(ember.DeviceError, match=rf"map_location sends tensors saved on cpu to '{missing}:3'"):
        _load_bytes(_checkpoint_bytes({"w": ember.ones(1)}), map_location=f"{missing}:3")


@pytest.mark.parametrize("map_location", [
    "cpu", ember.device("cpu"), {"cuda:1": "cpu"}, {"cuda": "cpu"}, {ember.device("cuda", 1): ember.device("cpu")},
    lambda saved: "cpu", lambda saved: "cpu" if saved.startswith("cuda") else None,
], ids=["str", "device", "dict", "dict-by-type", "dict-of-devices", "callable", "callable-none-keeps"])
def test_map_location_forms(map_location):
    out = _load_bytes(_saved_on("cuda:1"), map_location=map_location)
    assert out["w"].device == ember.device("cpu") and out["w"].tolist() == [0, 1, 2, 3, 4, 5]


def test_map_location_leaves_unmapped_devices_and_rejects_nonsense():
    out = _load_bytes(_checkpoint_bytes({"w": ember.ones(2)}), map_location={"cuda:0": "opencl:0"})
    assert out["w"].device == ember.device("cpu")
    seen = []
    _load_bytes(_saved_on("cuda:1"), map_location=lambda saved: seen.append(saved) or "cpu")
    assert seen == ["cuda:1"]  # resolved once per saved device, not per tensor
    with pytest.raises(TypeError, match="map_location must be"):
        _load_bytes(_checkpoint_bytes([]), map_location=3)


# -- safetensors ----------------------------------------------------------------------------------------

def test_safetensors_round_trip_with_metadata(tmp_path):
    from safetensors import safe_open
    tensors = {d.name: _sample(d, (2, 3)) for d in ALL_DTYPES}
    tensors["view"] = ember.arange(12.0).reshape(3, 4).T
    tensors["scalar"] = ember.tensor(2.5, dtype=ember.bfloat16)
    tensors["empty"] = ember.zeros(0, 3)
    path = tmp_path / "m.safetensors"
    ember.serialization.save_safetensors(tensors, path, metadata={"format": "pt", "step": "7"})
    out = ember.serialization.load_safetensors(path)
    assert set(out) == set(tensors)
    for name, t in tensors.items():
        assert _same(out[name], t), name
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"format": "pt", "step": "7"}
    assert os.listdir(tmp_path) == ["m.safetensors"]


@needs_torch
def test_safetensors_written_by_torch_load_into_ember(tmp_path):
    from safetensors.torch import save_file
    source = {"f32": torch.randn(3, 4), "i64": torch.arange(-5, 5, dtype=torch.int64),
              "bf16": torch.randn(5, 2).to(torch.bfloat16), "f16": torch.randn(3).half(),
              "flag": torch.tensor([True, False])}
    save_file(source, str(tmp_path / "torch.safetensors"))
    out = ember.serialization.load_safetensors(tmp_path / "torch.safetensors", device="cpu")
    assert out["f32"].dtype is ember.float32 and out["f32"].tolist() == source["f32"].tolist()
    assert out["i64"].dtype is ember.int64 and out["i64"].tolist() == source["i64"].tolist()
    assert out["bf16"].dtype is ember.bfloat16 and out["bf16"].tolist() == source["bf16"].float().tolist()
    assert out["bf16"]._host().view(np.uint16).tolist() == source["bf16"].view(torch.int16).numpy().astype(
        np.uint16).tolist()
    assert out["f16"].tolist() == source["f16"].float().tolist() and out["flag"].tolist() == [True, False]


@needs_torch
def test_safetensors_written_by_ember_load_into_torch(tmp_path):
    from safetensors.torch import load_file
    tensors = {"f32": ember.randn(3, 4), "i64": ember.arange(7), "bf16": ember.randn(4, 2).to(ember.bfloat16),
               "t": ember.randn(3, 2).T}
    ember.serialization.save_safetensors(tensors, tmp_path / "e.safetensors")
    out = load_file(str(tmp_path / "e.safetensors"))
    assert out["f32"].dtype == torch.float32 and out["f32"].tolist() == tensors["f32"].tolist()
    assert out["i64"].dtype == torch.int64 and out["i64"].tolist() == list(range(7))
    assert out["bf16"].dtype == torch.bfloat16 and out["bf16"].float().tolist() == tensors["bf16"].tolist()
    assert out["t"].tolist() == tensors["t"].tolist()


@needs_torch
def test_safetensors_errors(tmp_path):
    from safetensors.torch import save_file
    save_file({"u": torch.zeros(2, dtype=torch.uint32)}, str(tmp_path / "u32.safetensors"))
    with pytest.raises(CheckpointError, match="'u' has dtype U32"):
        ember.serialization.load_safetensors(tmp_path / "u32.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(CheckpointError, match="not a valid safetensors file"):
        ember.serialization.load_safetensors(tmp_path / "junk.safetensors")
    with pytest.raises(TypeError, match="str names and tensors"):
        ember.serialization.save_safetensors({"a": np.zeros(2)}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


# -- pickling for worker processes ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_tensors_pickle_for_worker_processes(dtype):
    t = _sample(dtype, (3, 5))
    for value in (t, t.T, t[1:, ::2]):
        out = pickle.loads(pickle.dumps(value))
        assert out.dtype is dtype and out.tolist() == value.tolist() and out.device == value.device
    grad = pickle.loads(pickle.dumps(ember.randn(2).requires_grad_()))
    assert grad.requires_grad


def _make_batch(seed):
    return {"x": ember.full((2, 2), float(seed), dtype=ember.bfloat16), "y": ember.tensor([seed])}


def test_tensors_cross_process_boundaries():
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        batch = pool.apply(_make_batch, (3,))
    assert batch["x"].dtype is ember.bfloat16 and batch["x"].tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert batch["y"].tolist() == [3]


def test_rebuild_tensor_accepts_bfloat16_arrays():
    from ember.serialization import rebuild_tensor
    array = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    t = rebuild_tensor(array, "bfloat16", "cpu", True)
    assert t.dtype is ember.bfloat16 and t.requires_grad and t.tolist() == [1.5, -2.0]


# -- pickles that name ember.dispatch's modules as they were before its rooms ---------------------------

#: ``pickle.dumps([ember.float32, ember.device("cpu")], protocol=2)`` as Ember wrote it while dtypes and devices
#: were defined in ``ember.dispatch.dtypes`` and ``ember.dispatch.device`` (now ``ember.dispatch.schema.*``).
OLD_DISPATCH_PATHS = (b"\x80\x02]q\x00(cember.dispatch.dtypes\nfrom_name\nq\x01X\x07\x00\x00\x00float32q\x02\x85q"
                      b"\x03Rq\x04cember.dispatch.device\ndevice\nq\x05X\x03\x00\x00\x00cpuq\x06\x85q\x07Rq\x08e.")


def test_pickles_naming_the_old_dispatch_modules_still_load():
    assert pickle.loads(OLD_DISPATCH_PATHS) == [ember.float32, ember.device("cpu")]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:  # a torch.save file holding that pickle and no tensors
        archive.writestr("archive/data.pkl", OLD_DISPATCH_PATHS)
    buffer.seek(0)
    loaded = ember.load(buffer, weights_only=True)
    assert loaded == [ember.float32, ember.device("cpu")] and loaded[0] is ember.float32


def test_dtypes_and_devices_pickle_under_the_paths_every_version_imports():
    """New pickles name the old, stable paths (aliases now), so older Ember versions load files written now."""
    data = pickle.dumps([ember.float16, ember.device("cpu")], protocol=2)
    assert b"ember.dispatch.dtypes\nfrom_name" in data and b"ember.dispatch.device\ndevice" in data
    assert b"schema" not in data
    assert _roundtrip({"dtype": ember.float16, "device": ember.device("cpu")}, weights_only=True) == \
        {"dtype": ember.float16, "device": ember.device("cpu")}
