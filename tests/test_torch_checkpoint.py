"""ember.load reads files written by torch.save (zip and legacy formats) without importing torch."""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError, UnpicklingError

torch = pytest.importorskip("torch")

FORMATS = pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
AVAILABLE_DEVICES = [name for name, status in ember.backends.available().items() if status == "available"]


def _torch_bytes(obj, legacy: bool) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=not legacy)
    return buffer.getvalue()


def _load(raw: bytes, **kwargs):
    return ember.load(io.BytesIO(raw), **kwargs)


def _as_numpy(t):
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def _values(t):
    host = np.asarray(t._host())
    return host.astype(np.float32) if t.dtype is ember.bfloat16 else host


class RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


# -- state dicts, shared storages and views --------------------------------------------------------------------

def _model_state():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    state = model.state_dict()
    state.update({"base": base, "rows": base[1:3], "cols": base[:, 1::2], "t": base.t(), "flat": base.view(-1),
                  "broadcast": torch.arange(3.0).expand(4, 3), "tied": state["0.weight"][:]})
    return state


@FORMATS
def test_state_dict_values_strides_and_metadata(legacy):
    state = _model_state()
    out = _load(_torch_bytes(state, legacy))
    assert list(out) == list(state) and type(out).__name__ == "OrderedDict"
    assert out._metadata == state._metadata
    for key, t in state.items():
        assert out[key].shape == tuple(t.shape) and out[key].dtype.name == str(t.dtype).split(".")[1], key
        assert out[key].stride() == t.stride(), key
        np.testing.assert_array_equal(_values(out[key]), _as_numpy(t), err_msg=key)
    assert out["1.num_batches_tracked"].dtype is ember.int64


@FORMATS
def test_tensors_over_one_storage_share_memory_on_cpu(legacy):
    out = _load(_torch_bytes(_model_state(), legacy))
    out["base"][2, 1] = -1.0
    assert out["rows"][1, 1].item() == -1.0 and out["cols"][2, 0].item() == -1.0
    assert out["t"][1, 2].item() == -1.0 and out["flat"][13].item() == -1.0
    assert out["tied"] is not out["0.weight"]  # torch.load also gives two tensor objects...
    out["tied"][0, 0] = 5.0
    assert out["0.weight"][0, 0].item() == 5.0  # ...over one storage
    assert out["base"].data_ptr_id() == out["rows"].data_ptr_id() != out["0.bias"].data_ptr_id()


@pytest.mark.parametrize("device", AVAILABLE_DEVICES)
def test_map_location_places_every_tensor(device):
    state = _model_state()
    raw = _torch_bytes(state, legacy=False)
    for map_location in (device, {"cpu": device}, lambda saved: device, ember.device(device)):
        out = _load(raw, map_location=map_location)
        assert all(t.device.type == ember.device(device).type for t in out.values())
        np.testing.assert_array_equal(_values(out["cols"]), state["cols"].numpy())


# -- dtypes -----------------------------------------------------------------------------------------------------

_DTYPES = ["float32", "float64", "float16", "bfloat16", "bool", "int8", "int16", "int32", "int64", "uint8"]


@FORMATS
def test_every_supported_dtype_bit_exactly(legacy):
    torch.manual_seed(1)
    values = torch.randn(5, 3) * 100
    state = {name: (values > 0 if name == "bool" else values.to(getattr(torch, name))) for name in _DTYPES}
    state["special"] = torch.tensor([float("nan"), float("inf"), -0.0, 65504.0]).half()
    out = _load(_torch_bytes(state, legacy))
    for name, t in state.items():
        assert out[name].dtype.name == str(t.dtype).split(".")[1]
        assert np.asarray(out[name]._host()).tobytes() == t.numpy().tobytes() if t.dtype != torch.bfloat16 \
            else np.asarray(out[name]._host()).view(np.uint16).tobytes() == t.view(torch.int16).numpy().tobytes()


@FORMATS
@pytest.mark.parametrize("dtype", ["complex32", "uint16", "float8_e4m3fn"])
def test_unsupported_dtypes_are_named(legacy, dtype):
    raw = _torch_bytes({"x": torch.zeros(2, dtype=getattr(torch, dtype))}, legacy)
    with pytest.raises(ember.DtypeError, match=rf"torch\.{dtype}"):
        _load(raw)


# -- optimizer state and whole modules ----------------------------------------------------------------------------

@FORMATS
def test_adam_state_dict_with_int_keys_and_step_tensors(legacy):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    saved = optimizer.state_dict()
    out = _load(_torch_bytes({"optimizer": saved, "epoch": 7, "note": b"bytes"}, legacy))
    state = out["optimizer"]["state"]
    assert list(state) == [0, 1] and all(type(k) is int for k in state)
    assert state[0]["step"].shape == () and state[0]["step"].item() == 1.0
    np.testing.assert_array_equal(_values(state[1]["exp_avg"]), saved["state"][1]["exp_avg"].numpy())
    group = out["optimizer"]["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and group["params"] == [0, 1] and group["lr"] == 1e-3
    assert out["epoch"] == 7 and out["note"] == b"bytes"


@FORMATS
def test_parameters_come_back_as_parameters(legacy):
    out = _load(_torch_bytes({"p": torch.nn.Parameter(torch.ones(2)), "frozen":
                              torch.nn.Parameter(torch.ones(1), requires_grad=False)}, legacy))
    assert isinstance(out["p"], ember.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], ember.nn.Parameter) and not out["frozen"].requires_grad


@FORMATS
def test_whole_torch_modules_are_refused_with_the_global_named(legacy):
    raw = _torch_bytes(torch.nn.Sequential(torch.nn.Linear(2, 2)), legacy)
    for weights_only in (True, False):
        with pytest.raises(UnpicklingError, match=r"torch\.nn\.modules\.container\.Sequential.*state_dict"):
            _load(raw, weights_only=weights_only)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [
        "torch.nn.modules.container.Sequential", "torch.nn.modules.linear.Linear"]
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(_torch_bytes(_model_state(), legacy))) == []


# -- hostile and damaged files ---------------------------------------------------------------------------------

@FORMATS
def test_a_shell_command_is_refused_without_running(tmp_path, legacy):
    marker = tmp_path / "pwned"
    raw = _torch_bytes({"w": torch.ones(2), "payload": RunsShell(marker)}, legacy)
    with pytest.raises(UnpicklingError, match=rf"global {os.system.__module__}\.system.*weights_only=False"):
        _load(raw)
    assert not marker.exists()
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == [
        f"{os.system.__module__}.system"]


@FORMATS
def test_truncated_files_raise_checkpoint_errors_only(legacy):
    raw = _torch_bytes({"w": torch.randn(50), "n": [1, 2]}, legacy)
    for cut in list(range(1, 64)) + list(range(64, len(raw), 13)):
        with pytest.raises(CheckpointError):
            _load(raw[:cut])


def test_corrupt_zip_records_fail_their_crc():
    raw = bytearray(_torch_bytes({"w": torch.arange(100.0)}, legacy=False))
    data_start = raw.index(np.float32(50.0).tobytes())  # inside the storage record
    raw[data_start] ^= 0x40
    with pytest.raises(CheckpointError, match="damaged"):
        _load(bytes(raw))


def test_zip_archives_that_are_not_torch_checkpoints():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="not a torch.save checkpoint"):
        _load(buffer.getvalue())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"x": 1}, protocol=2)[:-3])
    with pytest.raises(UnpicklingError, match="data.pkl"):
        _load(buffer.getvalue())


def test_loading_never_imports_torch(tmp_path):
    state = _model_state()
    torch.save(state, tmp_path / "zip.pt")
    torch.save(state, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of torch now fails
        import ember
        for name in ("zip.pt", "legacy.pt"):
            out = ember.load({str(tmp_path)!r} + "/" + name)
            out["base"][0, 0] = 9.0
            assert out["flat"][0].item() == 9.0 and out["2.weight"].shape == (2, 4)
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
