"""ember.save/ember.load with torch.save's semantics: any picklable object, NumPy arrays as data,
weights_only loading and its allow list, and pickling of modules, op functions and tensors."""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import json
import os
import pickle
import struct
import zlib

import ml_dtypes
import numpy as np
import pytest

import ember
from ember import nn
from ember.serialization import CheckpointError, UnpicklingError

_FOOTER = struct.Struct("<QQI8s")


@dataclasses.dataclass
class Config:
    name: str
    layers: list
    weight: object = None


class RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _save(obj) -> bytes:
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    return buffer.getvalue()


def _load(raw: bytes, **kwargs):
    return ember.load(io.BytesIO(raw), **kwargs)


def _header(raw: bytes) -> dict:
    offset, length, _, _ = _FOOTER.unpack(raw[-_FOOTER.size:])
    return json.loads(raw[offset:offset + length])


@pytest.fixture(autouse=True)
def _no_leftover_safe_globals():
    yield
    ember.serialization.clear_safe_globals()


# -- every nn module class, pickled whole ------------------------------------------------------------------

_SPECIAL_ARGS = {
    "RNNBase": ("RNN_TANH", 3, 4), "RNNCellBase": ("RNN_TANH", 3, 4),
    "TransformerEncoder": lambda: (nn.TransformerEncoderLayer(4, 2, dim_feedforward=8), 2),
    "TransformerDecoder": lambda: (nn.TransformerDecoderLayer(4, 2, dim_feedforward=8), 2),
    "Unflatten": (1, (2, 2)), "GroupNorm": (2, 4), "MultiheadAttention": (4, 2),
    "TransformerEncoderLayer": (4, 2), "TransformerDecoderLayer": (4, 2),
    "AdaptiveLogSoftmaxWithLoss": (4, 8, [2]), "FractionalMaxPool2d": (2, 3), "FractionalMaxPool3d": (2, 3),
}
_ARG_BY_NAME = {"kernel_size": 2, "output_size": 2, "normalized_shape": 4, "num_heads": 2, "nhead": 2, "dim": 1}


def _module_classes():
    return sorted(name for name in dir(nn) if inspect.isclass(getattr(nn, name))
                  and issubclass(getattr(nn, name), nn.Module))


def _construct(name: str) -> nn.Module:
    """The class built with simple arguments: a table for the few that need particular ones, else by name."""
    cls = getattr(nn, name)
    special = _SPECIAL_ARGS.get(name)
    if special is not None:
        return cls(*(special() if callable(special) else special))
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    args = [_ARG_BY_NAME.get(p.name, 4) for p in parameters
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return cls(*args)


def test_module_classes_are_found():
    assert {"Linear", "Conv2d", "LSTM", "Sequential", "TransformerEncoder", "ReLU"} <= set(_module_classes())


@pytest.mark.parametrize("name", _module_classes())
def test_every_module_class_saves_whole_and_loads_with_weights_only_false(name):
    module = _construct(name)
    raw = _save({"module": module, "epoch": 3})
    with pytest.raises(UnpicklingError, match=rf"global ember\.nn\..*{name}\b.*add_safe_globals"):
        _load(raw)
    out = _load(raw, weights_only=False)
    loaded = out["module"]
    assert type(loaded) is type(module) and out["epoch"] == 3
    assert repr(loaded) == repr(module)
    state, saved = loaded.state_dict(), module.state_dict()
    assert list(state) == list(saved)
    for key in saved:
        assert state[key].dtype == saved[key].dtype and state[key].tolist() == saved[key].tolist(), key
    for (key, p), (_, q) in zip(module.named_parameters(), loaded.named_parameters()):
        assert isinstance(q, nn.Parameter) and q.requires_grad == p.requires_grad, key


def test_a_reloaded_module_computes_what_the_original_did_and_trains():
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    x = ember.randn(4, 3)
    loaded = _load(_save(model), weights_only=False)
    assert loaded(x).tolist() == model(x).tolist()
    loaded(x).sum().backward()
    assert loaded[0].weight.grad is not None and model[0].weight.grad is None


def test_allowing_module_classes_loads_them_under_weights_only():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    raw = _save(model)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [
        "ember.nn.modules.container.Sequential", "ember.nn.modules.linear.Linear",
        "ember.nn.modules.activation.ReLU"]
    with ember.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []
        assert type(_load(raw)) is nn.Sequential
    assert ember.serialization.get_safe_globals() == []
    with pytest.raises(UnpicklingError, match="Sequential"):
        _load(raw)


# -- op functions, tensors and parameters pickle ---------------------------------------------------------------

def test_every_op_function_pickles_by_name():
    from ember.dispatch.ops import F
    for name, function in vars(F).items():
        assert pickle.loads(pickle.dumps(function)) is function, name
    public = [ember.add, ember.matmul, nn.functional.relu, nn.functional.softmax, nn.functional.cross_entropy,
              nn.functional.dropout]
    for function in public:
        assert pickle.loads(pickle.dumps(function)) is function, function


def test_op_functions_inside_saved_objects():
    raw = _save({"activation": nn.functional.relu, "combine": ember.add})
    out = _load(raw, weights_only=False)
    assert out["activation"] is nn.functional.relu and out["combine"] is ember.add
    with pytest.raises(UnpicklingError, match=r"ember\.nn\.functional\.activation\.relu"):
        _load(raw)


def test_tensors_and_parameters_pickle():
    param = nn.Parameter(ember.randn(3))
    plain = ember.randn(2).to(ember.bfloat16)
    p2, t2 = pickle.loads(pickle.dumps((param, plain)))
    assert isinstance(p2, nn.Parameter) and p2.requires_grad and p2.tolist() == param.tolist()
    assert not isinstance(t2, nn.Parameter) and t2.dtype is ember.bfloat16 and t2.tolist() == plain.tolist()


# -- any picklable object ---------------------------------------------------------------------------------------

def test_dataclasses_namespaces_and_nested_containers_round_trip():
    w = ember.randn(3)
    obj = {"config": Config("net", [1, (2, 3)], weight=w), "args": argparse.Namespace(lr=0.1, tags={"a", "b"}),
           "nested": [{"w": w, "pair": (w, Config("inner", []))}], "complex": 1 + 2j, "set": {1, 2},
           "frozen": frozenset({3}), "size": ember.Size([2, 3]), "dtype": ember.bfloat16, "device": ember.device("cpu")}
    out = _load(_save(obj), weights_only=False)
    assert out["config"].name == "net" and out["config"].layers == [1, (2, 3)]
    assert out["args"].lr == 0.1 and out["args"].tags == {"a", "b"}
    assert out["nested"][0]["pair"][1] == Config("inner", [])
    assert out["config"].weight is out["nested"][0]["w"] is out["nested"][0]["pair"][0]  # one tensor, shared
    assert out["config"].weight.tolist() == w.tolist()
    assert (out["complex"], out["set"], out["frozen"]) == (1 + 2j, {1, 2}, frozenset({3}))
    assert out["size"] == ember.Size([2, 3]) and type(out["size"]) is ember.Size
    assert out["dtype"] is ember.bfloat16 and out["device"] == ember.device("cpu")


def test_builtin_safe_objects_load_under_weights_only():
    obj = {"set": {1, 2}, "complex": 3j, "size": ember.Size([4]), "dtype": ember.float16,
           "device": ember.device("cpu"), "bytearray": bytearray(b"xy")}
    raw = _save(obj)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []
    assert _load(raw) == obj


def test_weights_only_refuses_user_classes_by_name_until_allowed():
    raw = _save({"config": Config("net", [1])})
    with pytest.raises(UnpicklingError, match=r"test_serialization_objects\.Config.*add_safe_globals.*"
                                              r"weights_only=False") as info:
        _load(raw)
    assert isinstance(info.value, CheckpointError) and isinstance(info.value, pickle.UnpicklingError)
    assert isinstance(info.value, ember.EmberError)
    ember.serialization.add_safe_globals([Config])
    assert ember.serialization.get_safe_globals() == [Config]
    assert _load(raw)["config"] == Config("net", [1])
    ember.serialization.clear_safe_globals()
    with pytest.raises(UnpicklingError):
        _load(raw)
    ember.serialization.add_safe_globals([(Config, "test_serialization_objects.Config")])
    assert _load(raw)["config"].name == "net"


def test_a_shell_command_in_a_pickled_object_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    raw = _save({"w": ember.ones(2), "payload": RunsShell(marker)})
    assert f"{os.system.__module__}.system" in _header(raw)["objects"]["globals"]
    with pytest.raises(UnpicklingError, match=rf"global {os.system.__module__}\.system"):
        _load(raw)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [
        f"{os.system.__module__}.system"]
    assert not marker.exists()


def test_reference_cycles_in_objects_and_containers():
    config = Config("loop", [])
    config.layers.append(config)
    out = _load(_save([config]), weights_only=False)
    assert out[0].layers[0] is out[0]


# -- NumPy arrays are data -----------------------------------------------------------------------------------

_ARRAYS = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "big_endian": np.arange(5, dtype=">i4"),
    "bool": np.array([True, False, True]),
    "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    "strided": np.arange(20, dtype=np.int16)[::3],
    "bf16": np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16),
    "text": np.array(["ab", "cde"]),
    "dates": np.array(["2024-01-02"], dtype="datetime64[D]"),
    "complex": np.array([1 + 2j], dtype=np.complex64),
    "zero_d": np.array(7, dtype=np.uint8),
    "empty": np.zeros((0, 3)),
}


def test_numpy_arrays_round_trip_as_data_under_weights_only():
    raw = _save(dict(_ARRAYS, scalar=np.float64(2.5), int_scalar=np.int32(-3)))
    header = _header(raw)
    assert "objects" not in header and len(header["arrays"]) == len(_ARRAYS) + 2  # nothing was pickled
    out = _load(raw)
    for name, array in _ARRAYS.items():
        assert type(out[name]) is np.ndarray and out[name].dtype == array.dtype and out[name].shape == array.shape
        assert np.array_equal(out[name], array), name
    assert type(out["scalar"]) is np.float64 and out["scalar"] == 2.5
    assert type(out["int_scalar"]) is np.int32 and out["int_scalar"] == -3
    out["f32"][0, 0] = 100  # loaded arrays are writable
    assert _ARRAYS["f32"][0, 0] == 0


def test_numpy_arrays_inside_pickled_objects_are_records_too():
    array = np.arange(4.0)
    raw = _save({"args": argparse.Namespace(mean=array, std=np.float32(0.5)), "same": array})
    header = _header(raw)
    assert not any(name.startswith("numpy") for name in header["objects"]["globals"])
    with ember.serialization.safe_globals([argparse.Namespace]):
        out = _load(raw)
    assert out["args"].mean is out["same"] and out["args"].mean.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert type(out["args"].std) is np.float32


def test_object_arrays_are_pickled_and_need_weights_only_false():
    raw = _save({"mixed": np.array([1, "a", None], dtype=object)})
    with pytest.raises(UnpicklingError, match="numpy"):
        _load(raw)
    assert _load(raw, weights_only=False)["mixed"].tolist() == [1, "a", None]


# -- the file format -------------------------------------------------------------------------------------------

def test_format_version_1_files_still_load():
    raw = bytearray(_save({"w": ember.arange(3), "n": [1, (2.5, None)]}))
    assert struct.unpack_from("<I", raw, 8)[0] == 2
    struct.pack_into("<I", raw, 8, 1)  # version 1 wrote exactly this layout for data-only trees
    out = _load(bytes(raw))
    assert out["w"].tolist() == [0, 1, 2] and out["n"] == [1, (2.5, None)]


def _rewrite_header(raw: bytes, change) -> bytes:
    offset, _, _, _ = _FOOTER.unpack(raw[-_FOOTER.size:])
    header = _header(raw)
    change(header)
    text = json.dumps(header).encode()
    return raw[:offset] + text + _FOOTER.pack(offset, len(text), zlib.crc32(text), b"EMBEREND")


@pytest.mark.parametrize("change, error, message", [
    (lambda h: h["root"]["items"][0][1].__setitem__("index", 9), CheckpointError, "refers to object #9"),
    (lambda h: h.pop("objects"), CheckpointError, "refers to pickled objects, but the file has none"),
    (lambda h: h["objects"].__setitem__("crc32", 1), CheckpointError, "fails its CRC-32"),
    (lambda h: h["objects"].__setitem__("nbytes", 10 ** 9), CheckpointError, "out of range"),
    (lambda h: h.__setitem__("tensors", []), UnpicklingError, r"refer to \('tensor', 0\)"),
    (lambda h: h["arrays"][0].__setitem__("dtype", "|O8"), CheckpointError, "unsupported dtype"),
    (lambda h: h["arrays"][0].__setitem__("shape", [5]), CheckpointError, "holds 16 bytes"),
])
def test_crafted_object_and_array_records_are_refused(change, error, message):
    raw = _save({"config": Config("x", [ember.ones(1)]), "a": np.zeros(2)})
    with pytest.raises(error, match=message):
        _load(_rewrite_header(raw, change), weights_only=False)


def test_damaged_pickle_bytes_are_refused_cleanly():
    raw = bytearray(_save({"config": Config("x", [1])}))
    header = _header(bytes(raw))
    start = header["objects"]["offset"]
    raw[start:start + header["objects"]["nbytes"]] = b"\xff" * header["objects"]["nbytes"]
    fixed = _rewrite_header(bytes(raw), lambda h: h["objects"].__setitem__(
        "crc32", zlib.crc32(b"\xff" * header["objects"]["nbytes"])))
    with pytest.raises(UnpicklingError, match="not a valid pickle"):
        _load(fixed, weights_only=False)


def test_objects_are_saved_atomically_and_unpicklable_ones_keep_the_old_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save({"config": Config("old", [])}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"at obj\['later'\]: it cannot be pickled"):
        ember.save({"config": Config("new", []), "later": lambda: 0}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]
